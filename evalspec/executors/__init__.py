"""Where conversations run: in this process (the runner itself) or on a Ray cluster (`--executor ray`).

    ray_executor   the driver's side: connect, pack the suites' files, start the actors, collect records
    cluster        the cluster's side: conversation workers, the cluster-wide limiter, the cache reader
    bundle         the suites' folders as one zip, unpacked by each worker into a folder of its own
"""

from evalspec.executors.ray_executor import ConversationLost, RayConfig, RayExecutor, check_reachable

__all__ = ["ConversationLost", "RayConfig", "RayExecutor", "check_reachable"]
