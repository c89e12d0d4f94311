"""names that tell the truth: request_log_entries (was console_requests), relay_round_trips (was relay_exchanges)

`console_requests` holds every API call, not only the console's; "exchange" is a logged request, so the
relay's ad-hoc request and its answer is a round trip.

Revision ID: d4f1a9b2c6e3
Revises: c3e8d1f0a2b5
Create Date: 2026-11-28 00:30:00

"""
from alembic import op


# revision identifiers, used by Alembic.
revision = 'd4f1a9b2c6e3'
down_revision = 'c3e8d1f0a2b5'
branch_labels = None
depends_on = None

# old name, new name, {index suffix: columns}, constraint name patterns (the metadata's naming convention,
# console.db.base, puts the table's name in each).
RENAMES = (
    (
        'console_requests',
        'request_log_entries',
        {
            'scope_created': ['workspace_id', 'created_at', 'id'],
            'scope_step': ['workspace_id', 'step', 'created_at'],
            'scope_request_id': ['workspace_id', 'request_id'],
        },
        ('pk_{}', 'fk_{}_api_key_id_api_keys', 'fk_{}_workspace_id_workspaces'),
    ),
    (
        'relay_exchanges',
        'relay_round_trips',
        {'expires': ['expires_at'], 'webhook': ['webhook_id', 'status', 'created_at']},
        ('pk_{}', 'fk_{}_webhook_id_webhooks'),
    ),
)


def _rename(old: str, new: str, indexes: dict, constraints: tuple) -> None:
    op.rename_table(old, new)
    if op.get_bind().dialect.name == 'postgresql':
        for suffix in indexes:
            op.execute(f'ALTER INDEX ix_{old}_{suffix} RENAME TO ix_{new}_{suffix}')
        for pattern in constraints:
            op.execute(f'ALTER TABLE {new} RENAME CONSTRAINT {pattern.format(old)} TO {pattern.format(new)}')
    else:
        # SQLite cannot rename an index (and its constraints are unnamed in the file): drop and create.
        for suffix, columns in indexes.items():
            op.drop_index(f'ix_{old}_{suffix}', table_name=new)
            op.create_index(f'ix_{new}_{suffix}', new, columns)


def upgrade():
    for old, new, indexes, constraints in RENAMES:
        _rename(old, new, indexes, constraints)


def downgrade():
    for old, new, indexes, constraints in RENAMES:
        _rename(new, old, indexes, constraints)
