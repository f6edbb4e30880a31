"""Real ACP agents behind the host, through the official ``agent-client-protocol`` SDK.

``AcpAgent`` runs an ACP agent as a subprocess; :mod:`.mapping` is the table of what each ACP
message becomes in AHP; :class:`AcpFrameLog` records every frame with links to the transitions
it produced.
"""

from .agent import AcpAgent
from .frames import AcpFrame, AcpFrameLog

__all__ = ["AcpAgent", "AcpFrame", "AcpFrameLog"]
