"""job list indexes end with id, the list's tiebreak

A page of jobs is ordered by (created_at, id); with id in the index, the database reads the page
straight from the index instead of sorting every job of the filter (a Link token, an account, or the
whole workspace) to find it.

Revision ID: aa0cbdc55ee9
Revises: b7c4e2a19d30
Create Date: 2026-11-23 12:00:00

"""
from alembic import op


# revision identifiers, used by Alembic.
revision = 'aa0cbdc55ee9'
down_revision = 'b7c4e2a19d30'
branch_labels = None
depends_on = None

INDEXES = {
    'ix_jobs_scope_link_token': ['workspace_id', 'mode', 'link_token_id', 'created_at'],
    'ix_jobs_scope_account': ['workspace_id', 'mode', 'account_id', 'created_at'],
    'ix_jobs_scope_created': ['workspace_id', 'mode', 'created_at'],
}


def upgrade():
    with op.batch_alter_table('jobs', schema=None) as batch_op:
        for name, columns in INDEXES.items():
            batch_op.drop_index(name)
            batch_op.create_index(name, [*columns, 'id'], unique=False)


def downgrade():
    with op.batch_alter_table('jobs', schema=None) as batch_op:
        for name, columns in INDEXES.items():
            batch_op.drop_index(name)
            batch_op.create_index(name, columns, unique=False)
