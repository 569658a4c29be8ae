"""Large controller files, fetched by the runner only when a task needs their content.

The controller does not ship a ``copy`` source of 1 MiB or more with the
batch (``ioc.controller.payloads.STREAM_MIN``): its entry names the file and
carries its SHA-1 and size. ``copy`` compares the digest with ``dest`` first
and calls :func:`fetch` only when they differ; the content then comes from
mitogen's ``FileService`` on the controller, 128 KiB at a time with at most
1 MiB unacknowledged per connection, into a private temporary file that
:func:`fetch` hands back (and removes with :func:`discard`, or at the
runner's end: :mod:`lifeline`). Nothing is written beside the destination
until the whole content is here, so a transfer that dies leaves nothing in
the user's directory.

Inside the controller (a controller step) the file is simply read from its
path.

Below an intermediary (``mitogen_via``), both come from the intermediary's
RAM instead (:mod:`ioc.agentless_runner.relay`): the batch names the
relay's context and the digests of the payloads it needs
(:func:`relayed`), and a large file is asked of the relay, which fetched
it from the controller once for every runner below it.
"""
import os
import shutil
import tempfile

import mitogen.core

from ioc.agentless_runner import lifeline

_ECONTEXT = []
#: Bytes fetched since the last batch ended (reported in its ``end`` event).
FETCHED = [0]
#: The context id of the intermediary's relay this runner is below (None: none).
RELAY = [None]
#: The relay's mitogen service name (its class, ``relay.Relay``, is not imported here).
RELAY_SERVICE = "ioc.agentless_runner.relay.Relay"


def attach(econtext):
    """Remember the runner's mitogen context (called by ``run_batch``)."""
    if not _ECONTEXT:
        _ECONTEXT.append(econtext)


class TransferFailed(Exception):
    pass


def relayed(spec):
    """The payloads (digest -> Blob) a batch below an intermediary names
    (``spec``: ``{"id": <relay context>, "digests": [...]}``, or None: the
    batch carries its payloads itself), asked of the relay in one call."""
    RELAY[0] = None if not spec else spec["id"]
    if not spec or not spec["digests"]:
        return {}
    if RELAY[0] == mitogen.context_id:  # the intermediary's own batch: its own relay
        return _own_relay().get(list(spec["digests"]))
    return _relay().call_service(RELAY_SERVICE, "get", digests=list(spec["digests"]))


def _relay():
    return mitogen.core.Context(_ECONTEXT[0].router, RELAY[0])


def _own_relay():
    """This runner's own relay (it is an intermediary), called in this thread."""
    import mitogen.service as service

    return service.get_or_create_pool(router=_ECONTEXT[0].router).get_service(RELAY_SERVICE)


def _from_relay(entry, out):
    """Large file ``entry`` from the relay's RAM into ``out``; its size."""
    if RELAY[0] == mitogen.context_id:
        content = _own_relay().content(entry["stream"], entry["digest"])
        out.write(content)
        return len(content)
    recv = mitogen.core.Receiver(_ECONTEXT[0].router)
    reply = _relay().call_service_async(RELAY_SERVICE, "fetch", path=entry["stream"],
                                        digest=entry["digest"], sender=recv.to_sender())
    for msg in recv:
        out.write(bytes(msg.unpickle()))
    return reply.get().unpickle()


def fetch(entry, path=None):
    """The path of a private temporary copy of the streamed file ``entry`` names
    (``path``, a new file in a private directory, when given)."""
    if path is None:
        fd, tmp = tempfile.mkstemp(prefix="ioc-transfer-")
    else:
        fd, tmp = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), path
    lifeline.remember_file(tmp)
    try:
        with os.fdopen(fd, "wb") as out:
            if not _ECONTEXT or mitogen.context_id == 0:  # in the controller itself
                with open(entry["stream"], "rb") as src:
                    shutil.copyfileobj(src, out, 1 << 20)
            elif RELAY[0] is not None:
                size = _from_relay(entry, out)
                if size != entry["size"]:
                    raise TransferFailed("the transfer of %s from the intermediary was cut "
                                         "short" % entry["stream"])
                # (not counted in FETCHED: it did not cross the controller's link)
            else:
                # Pure Python, it travels from the controller on first use
                # (mitogen's importer) and is preloaded with a batch that streams.
                import mitogen.service as service

                controller = mitogen.core.Context(_ECONTEXT[0].router, 0)
                ok, meta = service.FileService.get(controller, entry["stream"], out)
                if not ok:
                    raise TransferFailed("the transfer of %s from the controller was cut short"
                                         % entry["stream"])
                FETCHED[0] += meta["size"]
    except BaseException:
        discard(tmp)
        raise
    return tmp


def discard(path):
    lifeline.forget_file(path)
    try:
        os.unlink(path)
    except OSError:
        pass
