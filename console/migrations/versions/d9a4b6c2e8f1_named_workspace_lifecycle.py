"""workspaces: a workspace named in the console ("Keep this workspace") is marked so, for its longer lifecycle

A visitor's named workspace is an anonymous thing like any other: it is collected after
WORKSPACE_NAMED_IDLE_DAYS without a visit or API call. Workspaces that exist already are not marked (named in
the console or by the CLI, nothing tells them apart now), so none of them is collected for being named.

Revision ID: d9a4b6c2e8f1
Revises: c8e1f4a2d7b3
Create Date: 2026-11-29 00:10:00

"""
from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = 'd9a4b6c2e8f1'
down_revision = 'c8e1f4a2d7b3'
branch_labels = None
depends_on = None


def upgrade():
    # A plain ADD COLUMN, never a batch rebuild: on SQLite a batch copies the table, drops the original and
    # renames the copy, and the drop, with foreign keys on, cascades to every table that points at workspaces
    # (a class's trainees were deleted by it). A NOT NULL column with a constant default needs no rebuild.
    op.add_column(
        'workspaces', sa.Column('named_in_console', sa.Boolean(), nullable=False, server_default=sa.false())
    )


def downgrade():
    op.drop_column('workspaces', 'named_in_console')
