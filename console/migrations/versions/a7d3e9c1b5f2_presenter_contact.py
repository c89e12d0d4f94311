"""presenter: a profile carries the presenter's contact, printed on the run's summary

Revision ID: a7d3e9c1b5f2
Revises: b2f6c8d1e4a7
Create Date: 2026-11-28 03:20:00

"""
from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = 'a7d3e9c1b5f2'
down_revision = 'b2f6c8d1e4a7'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('presenter_profiles') as batch:
        batch.add_column(sa.Column('contact', sa.String(length=120), nullable=True))


def downgrade():
    with op.batch_alter_table('presenter_profiles') as batch:
        batch.drop_column('contact')
