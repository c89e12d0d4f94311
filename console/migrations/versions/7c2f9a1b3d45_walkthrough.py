"""walkthrough: what made each console Link token (preset or scenario), to offer it again

Revision ID: 7c2f9a1b3d45
Revises: c0f0a11ce001
Create Date: 2026-11-23 12:05:00

"""
from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = '7c2f9a1b3d45'
down_revision = 'c0f0a11ce001'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('console_link_tokens', schema=None) as batch_op:
        batch_op.add_column(sa.Column('origin', sa.String(length=80), nullable=True))


def downgrade():
    with op.batch_alter_table('console_link_tokens', schema=None) as batch_op:
        batch_op.drop_column('origin')
