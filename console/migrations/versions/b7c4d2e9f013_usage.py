"""usage: every API call in the request log (clock time, request id index), key usage per day, roll grace

Revision ID: b7c4d2e9f013
Revises: aa0cbdc55ee9
Create Date: 2026-11-23 12:20:00

"""
from alembic import op
import sqlalchemy as sa

import console.db.base


# revision identifiers, used by Alembic.
revision = 'b7c4d2e9f013'
down_revision = 'aa0cbdc55ee9'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table('key_usage_days',
    sa.Column('workspace_id', sa.Uuid(), nullable=False),
    sa.Column('api_key_id', sa.Uuid(), nullable=False),
    sa.Column('mode', sa.String(length=16), nullable=False),
    sa.Column('day', sa.Date(), nullable=False),
    sa.Column('requests', sa.Integer(), nullable=False),
    sa.Column('status_2xx', sa.Integer(), nullable=False),
    sa.Column('status_4xx', sa.Integer(), nullable=False),
    sa.Column('status_5xx', sa.Integer(), nullable=False),
    sa.Column('billable', sa.Integer(), nullable=False),
    sa.Column('unlogged', sa.Integer(), nullable=False),
    sa.Column('id', sa.Uuid(), nullable=False),
    sa.ForeignKeyConstraint(['api_key_id'], ['api_keys.id'], name=op.f('fk_key_usage_days_api_key_id_api_keys'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['workspace_id'], ['workspaces.id'], name=op.f('fk_key_usage_days_workspace_id_workspaces'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_key_usage_days')),
    sa.UniqueConstraint('api_key_id', 'day', name=op.f('uq_key_usage_days_api_key_id'))
    )
    with op.batch_alter_table('key_usage_days', schema=None) as batch_op:
        batch_op.create_index('ix_key_usage_days_scope_day', ['workspace_id', 'day'], unique=False)

    with op.batch_alter_table('api_keys', schema=None) as batch_op:
        batch_op.add_column(sa.Column('expires_at', console.db.base.UTCDateTime(timezone=True), nullable=True))

    with op.batch_alter_table('console_requests', schema=None) as batch_op:
        batch_op.add_column(sa.Column('clock_at', console.db.base.UTCDateTime(timezone=True), nullable=True))
        batch_op.create_index('ix_console_requests_scope_request_id', ['workspace_id', 'request_id'], unique=False)


def downgrade():
    with op.batch_alter_table('console_requests', schema=None) as batch_op:
        batch_op.drop_index('ix_console_requests_scope_request_id')
        batch_op.drop_column('clock_at')

    with op.batch_alter_table('api_keys', schema=None) as batch_op:
        batch_op.drop_column('expires_at')

    with op.batch_alter_table('key_usage_days', schema=None) as batch_op:
        batch_op.drop_index('ix_key_usage_days_scope_day')

    op.drop_table('key_usage_days')
