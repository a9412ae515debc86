"""Libraries of the operating system that wheels expect installed: the table lives in
:mod:`opdoctor.syslibs` (``explain`` reads it too, and imports nothing of the facts);
re-exported here for the checks.
"""

from __future__ import annotations

from opdoctor.syslibs import SYSTEM_LIBS, by_project, system_library_fix

__all__ = ["SYSTEM_LIBS", "by_project", "system_library_fix"]
