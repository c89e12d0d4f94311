"""worker heartbeats

Revision ID: 5a1e7c0d9b21
Revises: 4eea1c8e369e
Create Date: 2026-11-23 11:30:00.000000

"""
from alembic import op
import sqlalchemy as sa

import console.db.base


# revision identifiers, used by Alembic.
revision = '5a1e7c0d9b21'
down_revision = '4eea1c8e369e'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table('worker_heartbeats',
    sa.Column('worker_id', sa.String(length=200), nullable=False),
    sa.Column('host', sa.String(length=255), nullable=False),
    sa.Column('pid', sa.Integer(), nullable=False),
    sa.Column('started_at', console.db.base.UTCDateTime(timezone=True), nullable=False),
    sa.Column('last_seen', console.db.base.UTCDateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('worker_id', name=op.f('pk_worker_heartbeats'))
    )
    with op.batch_alter_table('worker_heartbeats', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_worker_heartbeats_last_seen'), ['last_seen'], unique=False)


def downgrade():
    with op.batch_alter_table('worker_heartbeats', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_worker_heartbeats_last_seen'))

    op.drop_table('worker_heartbeats')
