"""The heartbeat row a worker process keeps fresh while its loops run."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import String
from sqlalchemy.orm import Mapped, mapped_column

from console.extensions import db


class WorkerHeartbeat(db.Model):
    __tablename__ = "worker_heartbeats"

    # One row per worker process start: `host:pid:random`, so a restarted worker never reuses a row.
    worker_id: Mapped[str] = mapped_column(String(200), primary_key=True)
    host: Mapped[str] = mapped_column(String(255))
    pid: Mapped[int]
    started_at: Mapped[datetime]
    last_seen: Mapped[datetime] = mapped_column(index=True)
