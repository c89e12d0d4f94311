"""hooks: how the built-in inbox answers (per workspace), and what each inbox message was answered

Revision ID: b7c4e2a19d30
Revises: 7c2f9a1b3d45
Create Date: 2026-11-23 12:00:00

"""
from alembic import op
import sqlalchemy as sa

import console.db.base


# revision identifiers, used by Alembic.
revision = 'b7c4e2a19d30'
down_revision = '7c2f9a1b3d45'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table('console_inbox_settings',
    sa.Column('workspace_id', sa.Uuid(), nullable=False),
    sa.Column('behaviour', sa.String(length=16), nullable=False),
    sa.Column('updated_at', console.db.base.UTCDateTime(timezone=True), nullable=False),
    sa.Column('id', sa.Uuid(), nullable=False),
    sa.ForeignKeyConstraint(['workspace_id'], ['workspaces.id'], name=op.f('fk_console_inbox_settings_workspace_id_workspaces'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_console_inbox_settings')),
    sa.UniqueConstraint('workspace_id', name=op.f('uq_console_inbox_settings_workspace_id'))
    )
    with op.batch_alter_table('console_inbox_messages', schema=None) as batch_op:
        batch_op.add_column(sa.Column('behaviour', sa.String(length=16), nullable=True))


def downgrade():
    with op.batch_alter_table('console_inbox_messages', schema=None) as batch_op:
        batch_op.drop_column('behaviour')
    op.drop_table('console_inbox_settings')
