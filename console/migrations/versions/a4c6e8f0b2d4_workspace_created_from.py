"""workspaces: the creating client address (hashed) of a visitor workspace, so that a per-address cap can
make room by collecting that address's least recently used one

Revision ID: a4c6e8f0b2d4
Revises: b3d5f7a9c1e2
Create Date: 2026-11-29 02:20:00

"""
from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = 'a4c6e8f0b2d4'
down_revision = 'b3d5f7a9c1e2'
branch_labels = None
depends_on = None


def upgrade():
    # Plain ADD COLUMN and CREATE INDEX: a SQLite batch rebuild of `workspaces` would cascade deletes to
    # every child table.
    op.add_column('workspaces', sa.Column('created_from', sa.String(length=64), nullable=True))
    op.create_index('ix_workspaces_created_from', 'workspaces', ['created_from'])


def downgrade():
    op.drop_index('ix_workspaces_created_from', table_name='workspaces')
    op.drop_column('workspaces', 'created_from')
