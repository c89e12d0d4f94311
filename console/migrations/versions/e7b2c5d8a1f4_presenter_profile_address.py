"""presenter_profiles: the creating client address (hashed), so that the server-wide cap's eviction falls on
the address holding the most profiles first

Revision ID: e7b2c5d8a1f4
Revises: d9a4b6c2e8f1
Create Date: 2026-11-29 00:20:00

"""
from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = 'e7b2c5d8a1f4'
down_revision = 'd9a4b6c2e8f1'
branch_labels = None
depends_on = None


def upgrade():
    # Plain ADD COLUMN and CREATE INDEX: no SQLite batch rebuild of the table.
    op.add_column('presenter_profiles', sa.Column('created_from', sa.String(length=64), nullable=True))
    op.create_index('ix_presenter_profiles_created_from', 'presenter_profiles', ['created_from'])


def downgrade():
    op.drop_index('ix_presenter_profiles_created_from', table_name='presenter_profiles')
    op.drop_column('presenter_profiles', 'created_from')
