"""The two reference apps `bench.api` measures next to the service, served by gunicorn.

    gunicorn -w 2 'bench.api_apps:bare'     # GET / -> {"ok": true}: what Flask and gunicorn cost at all
    gunicorn -w 2 'bench.api_apps:naive'    # POST /items: one row into SQLite, the textbook way

`naive` is written the way a tutorial writes it (Flask-SQLAlchemy defaults, SQLite's default journal, one
commit per request); its file is $BENCH_NAIVE_DB. Both ignore the headers the load generator sends.
"""

from __future__ import annotations

import os

from flask import Flask, jsonify, request
from flask_sqlalchemy import SQLAlchemy
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

bare = Flask("bare")


@bare.get("/")
def hello():
    return jsonify({"ok": True})


class _Base(DeclarativeBase):
    pass


_db = SQLAlchemy(model_class=_Base)


class Item(_db.Model):
    __tablename__ = "items"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str]


def create_naive() -> Flask:
    app = Flask("naive")
    app.config["SQLALCHEMY_DATABASE_URI"] = f"sqlite:///{os.environ['BENCH_NAIVE_DB']}"
    _db.init_app(app)

    @app.post("/items")
    def add_item():
        item = Item(name=str((request.get_json(silent=True) or {}).get("org_name", "")))
        _db.session.add(item)
        _db.session.commit()
        return jsonify({"id": item.id, "name": item.name})

    return app


def create_naive_schema() -> None:
    """Create the naive app's table (once, before its workers start)."""
    with create_naive().app_context():
        _db.create_all()


# gunicorn imports `naive` by name; built only when asked, since it needs $BENCH_NAIVE_DB.
def __getattr__(name: str):
    if name == "naive":
        return create_naive()
    raise AttributeError(name)
