"""live pulse: a workspace's newest task finish and newest delivery attempt by index

Revision ID: a7d3e9f1c2b4
Revises: f3a9c2d47b10
Create Date: 2026-11-26 02:40:00

"""
from alembic import op


# revision identifiers, used by Alembic.
revision = 'a7d3e9f1c2b4'
down_revision = 'f3a9c2d47b10'
branch_labels = None
depends_on = None


def upgrade():
    op.create_index('ix_scheduled_tasks_workspace_finished', 'scheduled_tasks', ['workspace_id', 'finished_at'])
    op.create_index(
        'ix_webhook_deliveries_workspace_attempted', 'webhook_deliveries', ['workspace_id', 'last_attempt_at']
    )


def downgrade():
    op.drop_index('ix_webhook_deliveries_workspace_attempted', table_name='webhook_deliveries')
    op.drop_index('ix_scheduled_tasks_workspace_finished', table_name='scheduled_tasks')
