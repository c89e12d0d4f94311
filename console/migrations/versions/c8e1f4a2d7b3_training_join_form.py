"""training: a join form sent twice joins once, and one name joins a class once, even at the same moment

A member keeps the hash of its join form's one-time token (unique) and the hash of its name as the grid reads
it (unique per cohort). Members who joined before share no form token; of members whose names already read
alike, the first to join keeps the name's hash and the others none (so the constraint can be made).

Revision ID: c8e1f4a2d7b3
Revises: a7d3e9c1b5f2
Create Date: 2026-11-28 20:50:00

"""
import hashlib
import unicodedata

from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = 'c8e1f4a2d7b3'
down_revision = 'a7d3e9c1b5f2'
branch_labels = None
depends_on = None


def _name_key(name):
    # As console.training.cohorts.name_key, frozen here: a migration must not change with the code.
    read_as = " ".join(unicodedata.normalize("NFKC", name).casefold().split())
    return hashlib.sha256(read_as.encode()).hexdigest()


def upgrade():
    with op.batch_alter_table('training_members') as batch:
        batch.add_column(sa.Column('join_form_hash', sa.String(length=64), nullable=True))
        batch.add_column(sa.Column('name_key', sa.String(length=64), nullable=True))
        batch.create_unique_constraint(batch.f('uq_training_members_join_form_hash'), ['join_form_hash'])
    members = sa.table(
        'training_members',
        sa.column('id', sa.Uuid()),
        sa.column('cohort_id', sa.Uuid()),
        sa.column('name', sa.String()),
        sa.column('joined_at', sa.DateTime()),
        sa.column('name_key', sa.String()),
    )
    connection = op.get_bind()
    seen = set()
    rows = connection.execute(
        sa.select(members.c.id, members.c.cohort_id, members.c.name).order_by(members.c.joined_at, members.c.id)
    ).all()
    for ident, cohort_id, name in rows:
        key = _name_key(name)
        if (cohort_id, key) in seen:
            continue
        seen.add((cohort_id, key))
        connection.execute(sa.update(members).where(members.c.id == ident).values(name_key=key))
    with op.batch_alter_table('training_members') as batch:
        batch.create_unique_constraint(batch.f('uq_training_members_cohort_id'), ['cohort_id', 'name_key'])


def downgrade():
    with op.batch_alter_table('training_members') as batch:
        batch.drop_constraint(batch.f('uq_training_members_cohort_id'), type_='unique')
        batch.drop_constraint(batch.f('uq_training_members_join_form_hash'), type_='unique')
        batch.drop_column('name_key')
        batch.drop_column('join_form_hash')
