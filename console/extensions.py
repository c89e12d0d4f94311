"""Flask extensions, created unbound; `create_app` binds them with `init_app`."""

from flask_migrate import Migrate
from flask_sqlalchemy import SQLAlchemy
from flask_wtf.csrf import CSRFProtect

from console.db.base import Base

db = SQLAlchemy(model_class=Base)
migrate = Migrate()
csrf = CSRFProtect()
