"""console session: Link token strings kept server-side; workspace activity and keeping

Revision ID: 5d58ae9f4d90
Revises: a1d3e5f70001
Create Date: 2026-11-23 11:40:00

"""
from alembic import op
import sqlalchemy as sa

import console.db.base


# revision identifiers, used by Alembic.
revision = '5d58ae9f4d90'
down_revision = 'a1d3e5f70001'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table('console_link_tokens',
    sa.Column('workspace_id', sa.Uuid(), nullable=False),
    sa.Column('link_token_id', sa.Uuid(), nullable=False),
    sa.Column('token_ciphertext', sa.LargeBinary(), nullable=False),
    sa.Column('created_at', console.db.base.UTCDateTime(timezone=True), nullable=False),
    sa.Column('id', sa.Uuid(), nullable=False),
    sa.ForeignKeyConstraint(['link_token_id'], ['link_tokens.id'], name=op.f('fk_console_link_tokens_link_token_id_link_tokens'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['workspace_id'], ['workspaces.id'], name=op.f('fk_console_link_tokens_workspace_id_workspaces'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_console_link_tokens')),
    sa.UniqueConstraint('link_token_id', name=op.f('uq_console_link_tokens_link_token_id'))
    )
    with op.batch_alter_table('console_link_tokens', schema=None) as batch_op:
        batch_op.create_index('ix_console_link_tokens_scope_created', ['workspace_id', 'created_at'], unique=False)

    # Existing workspaces count as active now (so none is collected before WORKSPACE_IDLE_DAYS pass)
    # and are kept, except the anonymous console visitors' ones ("Console workspace"), which are
    # exactly the pile collection exists to clear.
    with op.batch_alter_table('workspaces', schema=None) as batch_op:
        batch_op.add_column(sa.Column('kept', sa.Boolean(), nullable=False, server_default=sa.true()))
        batch_op.add_column(sa.Column('last_active_at', console.db.base.UTCDateTime(timezone=True), nullable=False, server_default=sa.func.current_timestamp()))
        batch_op.create_index(batch_op.f('ix_workspaces_last_active_at'), ['last_active_at'], unique=False)
    workspaces = sa.table('workspaces', sa.column('name', sa.String), sa.column('is_demo', sa.Boolean), sa.column('kept', sa.Boolean))
    op.execute(
        workspaces.update()
        .where(workspaces.c.name == 'Console workspace', workspaces.c.is_demo == sa.false())
        .values(kept=False)
    )


def downgrade():
    with op.batch_alter_table('workspaces', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_workspaces_last_active_at'))
        batch_op.drop_column('last_active_at')
        batch_op.drop_column('kept')

    with op.batch_alter_table('console_link_tokens', schema=None) as batch_op:
        batch_op.drop_index('ix_console_link_tokens_scope_created')

    op.drop_table('console_link_tokens')
