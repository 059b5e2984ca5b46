"""Celery configuration: queues, routes and the beat schedule. Values come from crawlapp settings."""

import math

from kombu import Exchange, Queue

from crawlapp.core.queues import Queues
from crawlapp.core.retry import SERVERS, Server
from crawlapp.core.settings import get_settings

_settings = get_settings()
ALL_QUEUES = Queues.of(_settings).all

broker_url = _settings.broker_url
broker_connection_retry_on_startup = True
# AMQP heartbeats every 4 s (Celery's default is 120 s): a worker whose consumer waits on a
# reply that never comes (a connection half gone; the prefetch restore below was one) misses
# them, RabbitMQ closes its connection after two or three of them, and the worker connects
# again, instead of consuming nothing for minutes (at 10 s a crawl stood still up to 30 s).
# A worker's consumer sends them from its event loop, which its tasks do not hold (pool
# processes and threads); producers negotiate none. The Redis transport has no heartbeats.
broker_heartbeat = 4
# Unacknowledged messages of a worker that vanished come back after this many seconds
# (a task of a worker process killed under a live worker comes back at once).
broker_transport_options = {"visibility_timeout": 600}
if broker_url.startswith("redis://"):
    # kombu's Redis transport with one client per channel (crawlapp/adapters/kombu_redis.py).
    broker_transport = "crawlapp.adapters.kombu_redis:Transport"

# A message the broker refuses is sent again for CRAWL_REDIS_RIDE_OUT (Celery's default gives
# up within a second): a stage done during a broker outage of a few seconds would otherwise
# drop its batch's next stage, and the batch would wait out its leases to be fetched again.
_NEXT = SERVERS[Server.NEXT_STAGE]
task_publish_retry_policy = {
    "max_retries": 1 + math.ceil(_settings.redis_ride_out / _NEXT.cap),
    "interval_start": _NEXT.first, "interval_step": _NEXT.first, "interval_max": _NEXT.cap}

task_serializer = "msgpack"
accept_content = ["msgpack", "json"]
task_ignore_result = True
result_backend = None

# A batch is acknowledged only once its stage is done; a killed worker's batch is redelivered.
task_acks_late = True
task_reject_on_worker_lost = True
worker_prefetch_multiplier = 1
# No prefetch reduction after a broker reconnection: Celery restores the prefetch count as the
# tasks begun before it end, with a basic.qos sent from the task's own thread in a threads
# pool (the fetch worker's) on the connection the consumer's loop also waits on. Seen with
# RabbitMQ's connections cut twice within seconds: the loop's basic.qos waited for the reply
# the task's thread had read, consuming nothing until RabbitMQ closed the connection for
# missed heartbeats (12 s; py-spy dump of the stalled worker). A message delivered again
# meanwhile is dropped as taken up (app/stages.py), which is what the reduction guarded.
worker_enable_prefetch_count_reduction = False

# Task events, so Flower shows every task by name (received, started, succeeded, failed).
# No "sent" events: they would double the event traffic of the dispatcher and the chain.
# Task events cost the prefork master a third of its CPU (one Redis publish per task state);
# Flower turns them on in every worker when it starts, CRAWL_TASK_EVENTS=true from the start.
worker_send_task_events = _settings.task_events
task_send_sent_event = False

if _settings.quorum_queues:
    # RabbitMQ quorum queues: replicated and durable. A countdown (a stage's retry) goes
    # through Celery's native delayed delivery, which routes through topic exchanges.
    task_queues = [Queue(name, Exchange(name, type="topic"), routing_key=name,
                         queue_arguments={"x-queue-type": "quorum"}) for name in ALL_QUEUES]
    broker_transport_options = {**broker_transport_options, "confirm_publish": True}
else:
    task_queues = [Queue(name) for name in ALL_QUEUES]
task_default_queue = "control"
task_routes = {
    "crawl.parse": {"queue": "parse"},
    "crawl.dedup": {"queue": "dedup"},
    "crawl.store": {"queue": "store"},
    "crawl.extract_links": {"queue": "links"},
    "crawl.dispatch": {"queue": "control"},
    "crawl.recrawl": {"queue": "control"},
    "crawl.authority": {"queue": "control"},
    "crawl.partitions": {"queue": "control"},
    "crawl.host_counts": {"queue": "control"},
    # crawl.fetch goes to fetch.<mmh3(host) % CRAWL_SHARDS>, chosen when a batch is dispatched,
    # crawl.render to render.<the same shard>.
}

# The re-crawl drain's period: a tenth of the shortest interval in use (the settings' or a
# rule's), between 1 and 2 seconds.
DRAIN_PERIOD = min(2.0, max(1.0, _settings.recrawl_rule_set.shortest(
    _settings.recrawl_min_interval) / 10))
beat_schedule = {
    # Pages whose next crawl time has come go back into the frontier, a second or two after.
    "recrawl-due-pages": {"task": "crawl.recrawl", "schedule": DRAIN_PERIOD,
                          "options": {"expires": 5 * DRAIN_PERIOD}},
    # Host authority from the host graph: the links stage's scores and the frontier's boost.
    "host-authority": {"task": "crawl.authority", "schedule": _settings.authority_interval,
                       "options": {"expires": _settings.authority_interval}},
    # The fetch history's partitions of this month and the next (Postgres, migration 0010).
    "fetch-partitions": {"task": "crawl.partitions", "schedule": 6 * 3600.0,
                         "options": {"expires": 3600}},
    # The host counters' deltas into their totals (Postgres, migration 0011): a fold moves what
    # a minute of writes appended, and `crawlctl hosts` reads the totals and what is left.
    "host-counts": {"task": "crawl.host_counts", "schedule": 60.0, "options": {"expires": 60}},
}
DISPATCH_ENTRY = "dispatch-ready-hosts"
if _settings.beat_dispatch:
    # The dispatcher processes keep the fetch queues fed; this tick is the safety net.
    beat_schedule[DISPATCH_ENTRY] = {
        "task": "crawl.dispatch", "schedule": _settings.beat_dispatch,
        "options": {"expires": max(5.0, 2 * _settings.beat_dispatch)}}
beat_schedule_filename = str(_settings.data_dir / "celerybeat-schedule")
