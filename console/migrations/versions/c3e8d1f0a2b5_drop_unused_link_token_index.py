"""link tokens: the end_user_id index dropped (no query reads link tokens by end user; every POST paid for it)

Revision ID: c3e8d1f0a2b5
Revises: a7d3e9f1c2b4
Create Date: 2026-11-27 09:50:00

"""
from alembic import op


# revision identifiers, used by Alembic.
revision = 'c3e8d1f0a2b5'
down_revision = 'a7d3e9f1c2b4'
branch_labels = None
depends_on = None


def upgrade():
    op.drop_index('ix_link_tokens_end_user_id', table_name='link_tokens')


def downgrade():
    op.create_index('ix_link_tokens_end_user_id', 'link_tokens', ['end_user_id'])
