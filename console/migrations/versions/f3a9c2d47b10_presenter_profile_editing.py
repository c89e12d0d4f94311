"""presenter: profiles get edited captions, an uploaded logo and an edit secret

Revision ID: f3a9c2d47b10
Revises: e5c1a7b2d901
Create Date: 2026-11-24 10:00:00

"""
from alembic import op
import sqlalchemy as sa

import console.db.base


# revision identifiers, used by Alembic.
revision = 'f3a9c2d47b10'
down_revision = 'e5c1a7b2d901'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('presenter_profiles') as batch:
        batch.add_column(sa.Column('captions', sa.JSON(), nullable=True))
        batch.add_column(sa.Column('edit_secret_hash', sa.String(length=64), nullable=True))
        batch.add_column(sa.Column('logo', sa.LargeBinary(), nullable=True))
        batch.add_column(sa.Column('logo_type', sa.String(length=16), nullable=True))
        batch.add_column(sa.Column('logo_digest', sa.String(length=16), nullable=True))
        batch.add_column(sa.Column('updated_at', console.db.base.UTCDateTime(timezone=True), nullable=True))
    # Profiles saved before: no edited captions; no edit secret (nobody can edit them, as before).
    op.execute("UPDATE presenter_profiles SET captions = '{}', updated_at = created_at")
    with op.batch_alter_table('presenter_profiles') as batch:
        batch.alter_column('captions', existing_type=sa.JSON(), nullable=False)
        batch.alter_column(
            'updated_at', existing_type=console.db.base.UTCDateTime(timezone=True), nullable=False
        )


def downgrade():
    with op.batch_alter_table('presenter_profiles') as batch:
        batch.drop_column('updated_at')
        batch.drop_column('logo_digest')
        batch.drop_column('logo_type')
        batch.drop_column('logo')
        batch.drop_column('edit_secret_hash')
        batch.drop_column('captions')
