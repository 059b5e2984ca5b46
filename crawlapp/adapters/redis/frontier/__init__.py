"""The frontier: which URL is fetched next, and when each host may be asked again."""

from crawlapp.adapters.redis.frontier.redis_frontier import Lease, QueuedURL, RedisFrontier, ShardStats

__all__ = ["Lease", "QueuedURL", "RedisFrontier", "ShardStats"]
