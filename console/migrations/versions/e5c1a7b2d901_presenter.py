"""presenter: saved demo profiles (brand and stories) behind short URLs

Revision ID: e5c1a7b2d901
Revises: e1a2b3c4d5f6
Create Date: 2026-11-23 13:00:00

"""
from alembic import op
import sqlalchemy as sa

import console.db.base


# revision identifiers, used by Alembic.
revision = 'e5c1a7b2d901'
down_revision = 'e1a2b3c4d5f6'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table('presenter_profiles',
    sa.Column('slug', sa.String(length=16), nullable=False),
    sa.Column('name', sa.String(length=40), nullable=False),
    sa.Column('initials', sa.String(length=3), nullable=False),
    sa.Column('color', sa.String(length=7), nullable=False),
    sa.Column('theme', sa.String(length=8), nullable=False),
    sa.Column('stories', sa.JSON(), nullable=False),
    sa.Column('created_at', console.db.base.UTCDateTime(timezone=True), nullable=False),
    sa.Column('id', sa.Uuid(), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_presenter_profiles')),
    sa.UniqueConstraint('slug', name=op.f('uq_presenter_profiles_slug'))
    )


def downgrade():
    op.drop_table('presenter_profiles')
