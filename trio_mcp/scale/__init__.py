"""Running past one process: worker processes on one machine, and (with ``trio-mcp[redis]``) Redis for the
state several processes or machines share. See docs/deploying-and-scaling.md."""

from .workers import WorkerSettings, run_workers, supervise_workers

__all__ = ["WorkerSettings", "run_workers", "supervise_workers"]
