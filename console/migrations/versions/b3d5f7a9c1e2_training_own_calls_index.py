"""training: a trainee's newest own call by index, past a listener's polls

Revision ID: b3d5f7a9c1e2
Revises: e7b2c5d8a1f4
Create Date: 2026-11-29 00:10:00

The training grid's "last API call" leaves out a listener's polls and delivery results
(console.training.models.listener_loop). Without this partial index the query walked every poll of a
trainee whose listener ran (up to REQUEST_LOG_KEEP rows each). The predicate is the one the model
declares (console.training.models.own_call), written out: a query uses the index only when its WHERE
repeats it term for term.
"""
from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = 'b3d5f7a9c1e2'
down_revision = 'e7b2c5d8a1f4'
branch_labels = None
depends_on = None

OWN_CALL = (
    "NOT (step != '' OR method = 'POST' AND step = '' "
    "AND (path LIKE '%/v1/sandbox/listen' OR path LIKE '%/v1/sandbox/listen/%') "
    "AND status IS NOT NULL AND status >= 200 AND status < 300 AND path LIKE '%/v1/sandbox/listen/%')"
)


def upgrade():
    op.create_index(
        'ix_request_log_entries_own_calls',
        'request_log_entries',
        ['workspace_id', 'created_at', 'step', 'method', 'status', 'path'],
        sqlite_where=sa.text(OWN_CALL),
        postgresql_where=sa.text(OWN_CALL),
    )


def downgrade():
    op.drop_index('ix_request_log_entries_own_calls', table_name='request_log_entries')
