"""An intermediary's part: the runner of a host that other hosts are reached through.

A host named by others' ``mitogen_via`` (or chosen by ``ioc_via_auto``)
runs, besides its own batches, a *relay*: a mitogen service on threads of
its own (mitogen's service pool), so none of it waits for the batch its
main thread may be running. The relay

* **starts connections** to the hosts below it (:meth:`Relay.connect`),
  as many at once as the controller asks (it paces them, one window per
  intermediary), while the controller goes on; mitogen's own way
  (``router.ssh(via=...)``) makes them one after another on the
  intermediary's main thread, after any batch running there;
* **keeps payloads in RAM** (:meth:`Relay.store`): controller files and
  Ansible's module files, by content digest, pushed by the controller once
  per intermediary; a runner below asks for the ones its batch names
  (:meth:`Relay.get`), over the fast link;
* **serves large files** (``copy`` sources streamed from the controller's
  ``FileService``): the first runner below that needs one makes the relay
  fetch it from the controller, once, into RAM; every runner below gets
  it from there (:meth:`Relay.fetch`).

mitogen itself forwards the runner's code the same way: each module
crosses the controller's link once per intermediary (``FORWARD_MODULE``,
served from the intermediary's importer cache).

Runs on the intermediary, which has ``mitogen.parent`` (it starts
connections) and ``mitogen.service``: the controller sends them before it
starts the relay (``ioc.transport.connector``).
"""
import io
import logging
import socket
import threading

import mitogen.core
import mitogen.parent
import mitogen.service

from ioc.agentless_runner import spawning

LOG = logging.getLogger(__name__)

#: Seconds a runner below waits for a payload the controller announced.
WAIT = 120.0
#: Bytes per message when a large file goes to a runner below.
CHUNK = 128 * 1024


@mitogen.core.takes_econtext
def start(threads, econtext=None):
    """Make this runner an intermediary: its router can start connections, and
    the relay answers on ``threads`` threads of mitogen's service pool.

    Called by the controller right behind the runner's first call, before
    any batch, on the main thread (mitogen's ``upgrade_router`` must run
    there, as its own ``_proxy_connect`` runs it).
    """
    mitogen.parent.upgrade_router(econtext)
    spawning.lighten()  # (ssh without Python before exec, a first stage that ends)
    # The broker swaps its poller (and drops its timers) on its own thread:
    # let that be done before the pool's threads exist and send or log.
    econtext.broker.defer_sync(lambda: None)
    pool = mitogen.service.get_or_create_pool(size=threads, router=econtext.router)
    pool.get_invoker(Relay.name(), None)  # (activated now: runners below may ask first)
    return pool.size


class Relay(mitogen.service.Service):
    """Connections, payloads and large files for the runners below this host."""

    def __init__(self, router):
        super(Relay, self).__init__(router)
        self._cond = threading.Condition()
        #: digest -> mitogen.core.Blob: payloads the controller pushed.
        self._blobs = {}
        #: digest -> bytes of the large files fetched from the controller.
        self._files = {}
        #: digests of large files being fetched (others wait for them).
        self._fetching = set()

    @mitogen.service.expose(policy=mitogen.service.AllowParents())
    def connect(self, method, kwargs):
        """Start a connection (``method``: ``ssh``...) as ``router.<method>()`` would
        from here; answers as mitogen's ``_proxy_connect`` does."""
        try:
            context = self.router._connect(klass=mitogen.parent.get_connection_class(method),
                                           **kwargs)
        except mitogen.core.StreamError as exc:
            return {u"id": None, u"name": None,
                    u"msg": u"error occurred on host %s: %s" % (socket.gethostname(), exc)}
        return {u"id": context.context_id, u"name": context.name, u"msg": None}

    @mitogen.service.expose(policy=mitogen.service.AllowParents())
    @mitogen.service.no_reply()
    def store(self, blobs):
        """Keep ``blobs`` (digest -> Blob) for the runners below."""
        with self._cond:
            self._blobs.update(blobs)
            self._cond.notify_all()

    @mitogen.service.expose(policy=mitogen.service.AllowAny())
    def get(self, digests):
        """The blobs of ``digests`` (digest -> Blob), waiting for those the
        controller announced and has not delivered yet (they travel on
        another message than the batch that names them)."""
        with self._cond:
            missing = self._wait(lambda: [d for d in digests if d not in self._blobs])
            if missing:
                raise mitogen.core.CallError("the intermediary did not receive %d payload(s) "
                                             "within %ds" % (len(missing), WAIT))
            return dict((d, self._blobs[d]) for d in digests)

    @mitogen.service.expose(policy=mitogen.service.AllowAny())
    @mitogen.service.no_reply()
    def fetch(self, path, digest, sender, msg):
        """Send large file ``path`` (content ``digest``) to ``sender`` in chunks, then
        close it; the reply is its size. Fetched from the controller's
        FileService the first time, kept here for the others."""
        try:
            content = self.content(path, digest)
        except Exception as exc:
            sender.close()
            msg.reply(mitogen.core.CallError(exc))
            return
        for offset in range(0, len(content), CHUNK):
            sender.send(mitogen.core.Blob(content[offset:offset + CHUNK]))
        sender.close()
        msg.reply(len(content))

    def content(self, path, digest):
        """Large file ``path`` (content ``digest``) as bytes, fetched from the
        controller the first time (other callers wait for that one fetch)."""
        with self._cond:
            self._wait(lambda: digest in self._fetching)
            if digest in self._files:
                return self._files[digest]
            self._fetching.add(digest)
        content = None
        try:
            out = io.BytesIO()
            controller = mitogen.core.Context(self.router, 0)
            ok, _ = mitogen.service.FileService.get(controller, path, out)
            if not ok:
                raise IOError("the transfer of %s from the controller was cut short" % path)
            content = out.getvalue()
            return content
        finally:
            with self._cond:
                self._fetching.discard(digest)
                if content is not None:
                    self._files[digest] = content
                self._cond.notify_all()

    def _wait(self, pending):
        """Wait (holding ``_cond``) until ``pending()`` is empty or WAIT passes; its last value."""
        deadline = mitogen.core.now() + WAIT
        left = pending()
        while left and mitogen.core.now() < deadline:
            self._cond.wait(max(0.0, deadline - mitogen.core.now()))
            left = pending()
        return left
