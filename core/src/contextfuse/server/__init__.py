"""The HTTP service (``contextfuse serve``): assembly over configured projects, compaction.

FastAPI and uvicorn are imported only by the modules that need them, so importing this
package stays cheap.
"""

from contextfuse.server.settings import ServerSettings, is_loopback, load_server_settings

__all__ = ["ServerSettings", "is_loopback", "load_server_settings"]
