"""Flask extensions, created unbound; `create_app` binds them with `init_app`."""

from flask_sqlalchemy import SQLAlchemy
from flask_wtf.csrf import CSRFProtect

from console.db.base import Base
from console.db.pinning import PinnableSession

# The session class and join mode only matter when a test pins a connection (console/db/pinning.py).
db = SQLAlchemy(
    model_class=Base,
    session_options={"class_": PinnableSession, "join_transaction_mode": "create_savepoint"},
)
csrf = CSRFProtect()
