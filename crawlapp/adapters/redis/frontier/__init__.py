"""The frontier: which URL is fetched next, and when each host may be asked again."""

from crawlapp.adapters.redis.frontier.redis_frontier import RedisFrontier, ShardStats

__all__ = ["RedisFrontier", "ShardStats"]
