"""Imports every model module so the metadata (and Alembic) sees all tables."""

from console.accounts import models as accounts  # noqa: F401
from console.conformance import models as conformance  # noqa: F401
from console.events import models as events  # noqa: F401
from console.health import models as health  # noqa: F401
from console.idempotency import models as idempotency  # noqa: F401
from console.jobs import models as jobs  # noqa: F401
from console.keys import models as keys  # noqa: F401
from console.link import models as link  # noqa: F401
from console.link_tokens import models as link_tokens  # noqa: F401
from console.presenter import models as presenter  # noqa: F401
from console.requestlog import models as requestlog  # noqa: F401
from console.scheduler import models as scheduler  # noqa: F401
from console.training import models as training  # noqa: F401
from console.web.link import models as console_link_tokens  # noqa: F401
from console.web.webhooks import models as inbox  # noqa: F401
from console.webhooks import models as webhooks  # noqa: F401
from console.workspaces import models as workspaces  # noqa: F401
from console.world import models as world  # noqa: F401
