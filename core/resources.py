"""Files the code reads at run time (prompts, demo data, rules), located with importlib.resources.

They ship inside the installed distribution as package data, so a wheel installed anywhere finds them; a
checkout (editable install) resolves the same names to the source folders, which stay the source of truth.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path


class ResourceMissing(Exception):
    """A packaged resource is not on disk (a broken or zipped installation)."""


def package_path(package: str, *parts: str) -> Path:
    """The on-disk path of the folder or file `parts` inside `package` (the tools read real files and folders)."""
    resource = files(package)
    for part in parts:
        resource = resource.joinpath(part)
    if not isinstance(resource, Path):  # a zip import: the folder readers need real paths
        raise ResourceMissing(f"{package}/{'/'.join(parts)} is not a plain file; install diagbot unzipped (pip install)")
    return resource
