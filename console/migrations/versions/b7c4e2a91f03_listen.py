"""relayed webhooks: listener deliveries and ad-hoc exchanges

Revision ID: b7c4e2a91f03
Revises: 5d58ae9f4d90
Create Date: 2026-11-23 12:10:00.000000

"""
from alembic import op
import sqlalchemy as sa

import console.db.base


# revision identifiers, used by Alembic.
revision = 'b7c4e2a91f03'
down_revision = '5d58ae9f4d90'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table('relay_exchanges',
    sa.Column('webhook_id', sa.Uuid(), nullable=False),
    sa.Column('method', sa.String(length=16), nullable=False),
    sa.Column('headers', sa.JSON(), nullable=False),
    sa.Column('body', sa.Text(), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('claim_token', sa.Uuid(), nullable=True),
    sa.Column('claimed_until', console.db.base.UTCDateTime(timezone=True), nullable=True),
    sa.Column('expires_at', console.db.base.UTCDateTime(timezone=True), nullable=False),
    sa.Column('created_at', console.db.base.UTCDateTime(timezone=True), nullable=False),
    sa.Column('status_code', sa.Integer(), nullable=True),
    sa.Column('latency_ms', sa.Integer(), nullable=True),
    sa.Column('response_excerpt', sa.Text(), nullable=True),
    sa.Column('error', sa.String(length=500), nullable=True),
    sa.Column('id', sa.Uuid(), nullable=False),
    sa.ForeignKeyConstraint(['webhook_id'], ['webhooks.id'], name=op.f('fk_relay_exchanges_webhook_id_webhooks'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_relay_exchanges'))
    )
    with op.batch_alter_table('relay_exchanges', schema=None) as batch_op:
        batch_op.create_index('ix_relay_exchanges_expires', ['expires_at'], unique=False)
        batch_op.create_index('ix_relay_exchanges_webhook', ['webhook_id', 'status', 'created_at'], unique=False)

    with op.batch_alter_table('webhooks', schema=None) as batch_op:
        batch_op.add_column(sa.Column('listener_seen_at', console.db.base.UTCDateTime(timezone=True), nullable=True))

    with op.batch_alter_table('webhook_deliveries', schema=None) as batch_op:
        batch_op.add_column(sa.Column('relayed', sa.Boolean(), nullable=False, server_default=sa.false()))
        batch_op.add_column(sa.Column('relay_timestamp', sa.Integer(), nullable=True))
        batch_op.drop_index('ix_webhook_deliveries_due')
        batch_op.drop_index('ix_webhook_deliveries_lease')
        batch_op.create_index('ix_webhook_deliveries_due', ['status', 'relayed', 'run_after'], unique=False)
        batch_op.create_index('ix_webhook_deliveries_lease', ['status', 'relayed', 'claimed_until'], unique=False)


def downgrade():
    with op.batch_alter_table('webhook_deliveries', schema=None) as batch_op:
        batch_op.drop_index('ix_webhook_deliveries_lease')
        batch_op.drop_index('ix_webhook_deliveries_due')
        batch_op.create_index('ix_webhook_deliveries_lease', ['status', 'claimed_until'], unique=False)
        batch_op.create_index('ix_webhook_deliveries_due', ['status', 'run_after'], unique=False)
        batch_op.drop_column('relay_timestamp')
        batch_op.drop_column('relayed')

    with op.batch_alter_table('webhooks', schema=None) as batch_op:
        batch_op.drop_column('listener_seen_at')

    with op.batch_alter_table('relay_exchanges', schema=None) as batch_op:
        batch_op.drop_index('ix_relay_exchanges_webhook')
        batch_op.drop_index('ix_relay_exchanges_expires')

    op.drop_table('relay_exchanges')
