"""training: a member keeps the hash of the join form's one-time token, so the same form sent twice joins once

Revision ID: c8e1f4a2d7b3
Revises: a7d3e9c1b5f2
Create Date: 2026-11-28 20:50:00

"""
from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = 'c8e1f4a2d7b3'
down_revision = 'a7d3e9c1b5f2'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('training_members') as batch:
        batch.add_column(sa.Column('join_form_hash', sa.String(length=64), nullable=True))
        batch.create_unique_constraint(batch.f('uq_training_members_join_form_hash'), ['join_form_hash'])


def downgrade():
    with op.batch_alter_table('training_members') as batch:
        batch.drop_constraint(batch.f('uq_training_members_join_form_hash'), type_='unique')
        batch.drop_column('join_form_hash')
