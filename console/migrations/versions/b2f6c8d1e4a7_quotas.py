"""quotas: profiles and cohorts know their creating browser; profiles their last use; cohorts can be archived

Revision ID: b2f6c8d1e4a7
Revises: 9c31f0e2a7d4
Create Date: 2026-11-29 10:00:00

"""
from alembic import op
import sqlalchemy as sa

import console.db.base


# revision identifiers, used by Alembic.
revision = 'b2f6c8d1e4a7'
down_revision = '9c31f0e2a7d4'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('presenter_profiles') as batch:
        batch.add_column(sa.Column('created_by', sa.String(length=64), nullable=True))
        batch.add_column(sa.Column('last_used_at', console.db.base.UTCDateTime(timezone=True), nullable=True))
    # Profiles saved before: last used when last changed; no creating browser (no per-browser count).
    op.execute("UPDATE presenter_profiles SET last_used_at = updated_at")
    with op.batch_alter_table('presenter_profiles') as batch:
        batch.alter_column(
            'last_used_at', existing_type=console.db.base.UTCDateTime(timezone=True), nullable=False
        )
        batch.create_index(batch.f('ix_presenter_profiles_created_by'), ['created_by'], unique=False)
        batch.create_index(batch.f('ix_presenter_profiles_last_used_at'), ['last_used_at'], unique=False)
    with op.batch_alter_table('training_cohorts') as batch:
        batch.add_column(sa.Column('created_by', sa.String(length=64), nullable=True))
        batch.add_column(sa.Column('archived_at', console.db.base.UTCDateTime(timezone=True), nullable=True))
        batch.create_index(batch.f('ix_training_cohorts_created_by'), ['created_by'], unique=False)


def downgrade():
    with op.batch_alter_table('training_cohorts') as batch:
        batch.drop_index(batch.f('ix_training_cohorts_created_by'))
        batch.drop_column('archived_at')
        batch.drop_column('created_by')
    with op.batch_alter_table('presenter_profiles') as batch:
        batch.drop_index(batch.f('ix_presenter_profiles_last_used_at'))
        batch.drop_index(batch.f('ix_presenter_profiles_created_by'))
        batch.drop_column('last_used_at')
        batch.drop_column('created_by')
