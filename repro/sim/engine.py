"""Serving one chat request per role: single, prefill (with its bootstrap side) or decode."""

from __future__ import annotations

import asyncio
import logging
import time
import zlib
from collections.abc import AsyncIterator
from typing import Any

import orjson
from starlette.responses import Response, StreamingResponse

from repro.sim.cache import CacheMatch, PrefixCache
from repro.sim.config import EngineConfig
from repro.sim.faults import DRIFT_MIN_CONTEXT_TOKENS as DRIFT_CONTEXT_TOKENS
from repro.sim.faults import BootstrapWorker, Drift, IndexKRace, splice
from repro.sim.formats import MODEL_FORMATS, tool_parser
from repro.sim.generation import Generation
from repro.sim.kv_sender import KvSender
from repro.sim.logprobs import LogprobModel
from repro.sim.metrics import EngineMetrics
from repro.sim.model import earlier_calls, encode_turn, plan_turn
from repro.sim.near_tie import NearTieFlip
from repro.sim.pd import HandoverBoard, KvReceiver, TransferError
from repro.sim.pool import SlotPool
from repro.sim.prompt import render_prompt
from repro.sim.request import BadRequest, ChatRequest
from repro.sim.response import DONE, TurnRenderer, error_body, usage_of, whole_body
from repro.sim.scheduler import PrefillForward, Scheduler
from repro.sim.shaping import cut_at_stop, shaped_turn
from repro.sim.timing import CostModel

log = logging.getLogger("repro.sim")


def json_response(payload: bytes, status: int = 200) -> Response:
    return Response(payload, status_code=status, media_type="application/json")


class Engine:
    def __init__(self, config: EngineConfig) -> None:
        self.config = config
        self.metrics = EngineMetrics()
        self.cost = CostModel.for_config(config)
        # SGLang's decode server runs without a radix cache unless asked (research/sglang.md §2).
        cache = (
            None
            if config.role == "decode"
            else PrefixCache(config.device_pool_tokens, config.hicache)
        )
        self.cache = cache
        self.near_tie = NearTieFlip(config.stream_interval_tokens)
        self.scheduler = Scheduler(
            config,
            self.cost,
            cache,
            self.metrics,
            on_prefill=self._on_prefill,
            on_decode=self.near_tie.on_decode if config.near_tie_flip else None,
        )
        if cache is not None:
            log.info(
                "device KV pool: %d tokens (%.0f GB at %d bytes per token, index-K %s)",
                cache.capacity_tokens,
                config.kv_pool_gb,
                config.bytes_per_token,
                config.index_k_dtype,
            )
        # The family the scripted agent writes, and the parser --tool-call-parser names.
        self.format = MODEL_FORMATS[config.model_format]
        self.tool_parser = (
            tool_parser(config.tool_call_parser, config.model_format)
            if config.tool_call_parser
            else None
        )
        self.race = IndexKRace(config)
        self.pool = SlotPool(size=512)
        self.bootstrap_worker = BootstrapWorker(config)
        self.drift = Drift(config)
        self.board = HandoverBoard() if config.role == "prefill" else None
        self.sender = (
            KvSender(self.board, self.bootstrap_worker, config, self.cost, self.metrics)
            if self.board is not None
            else None
        )
        self.receiver = KvReceiver(config.bootstrap_timeout_s) if config.role == "decode" else None
        self.ready = False
        self.started_at = time.time()
        self._by_rid: dict[str, Generation] = {}
        self._awaiting_kv: set[Generation] = set()  # decode: hand-overs not yet received
        self._rooms_by_rid: dict[str, int] = {}  # prefill: rooms of recent requests (bounded)
        self._task: asyncio.Task[None] | None = None
        self._background: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        self._task = asyncio.create_task(self.scheduler.run(), name="scheduler")
        self.ready = True

    async def stop(self) -> None:
        self.ready = False
        if self._task is not None:
            self._task.cancel()
        for gen in list(self._by_rid.values()):
            self.scheduler.abort(gen)
        if self.receiver is not None:
            await self.receiver.aclose()

    # --- chat ------------------------------------------------------------------------

    async def chat(self, body: bytes) -> Response:
        try:
            req = ChatRequest.from_body(body)
        except BadRequest as exc:
            return json_response(error_body(str(exc), 400), 400)
        prompt = render_prompt(req.messages, req.tools, req.thinking, self.format)
        limit = self.config.context_length_tokens
        if prompt.prompt_tokens > limit:
            message = (
                f"The input ({prompt.prompt_tokens} tokens) is longer than the model's "
                f"context length ({limit} tokens)."
            )
            return json_response(error_body(message, 400), 400)
        # Stable across processes and runs (prefill and decode agree): seeds timing noise.
        key = zlib.crc32(orjson.dumps([len(req.messages), req.messages[-1]]))
        if self.config.role == "prefill":
            gen = Generation(req.rid, prompt, [], room=req.bootstrap_room, key=key)
            return self._beyond_pool(prompt.prompt_tokens) or await self._prefill(req, gen)
        messages = req.messages
        if self.drift.enabled:
            # The load the server holds: what it runs or queues, and (decode) what awaits its KV.
            held = [*self.scheduler.all_generations(), *self._awaiting_kv]
            long_running = sum(1 for g in held if g.context_tokens >= DRIFT_CONTEXT_TOKENS)
            messages = (
                self.drift.perturb(messages, prompt.prompt_tokens, long_running, key) or messages
            )
        plan = shaped_turn(
            plan_turn(messages, req.tools),
            messages,
            req.tools,
            tool_choice=req.tool_choice,
            response_format=req.response_format,
            parallel_tool_calls=req.parallel_tool_calls,
        )
        written = encode_turn(plan, req.thinking, self.format, earlier_calls(messages))
        completion, _ = cut_at_stop(written, req.stop)
        gen = Generation(
            req.rid,
            prompt,
            self.format.tokenizer.split(completion),
            room=req.bootstrap_room,
            key=key,
            think_close=self.format.think_close,
            think_open=self.format.think_open,
        )
        gen.max_tokens = req.max_tokens
        # Scored against the plan, copied before any fault touches the tokens.
        scores = (
            LogprobModel(
                key, gen.tokens, req.top_logprobs, self.format.think_close, self.format.think_open
            )
            if req.logprobs
            else None
        )
        if (beyond := self._beyond_pool(prompt.prompt_tokens + len(gen.tokens))) is not None:
            return beyond
        if self.config.role == "decode" and req.bootstrap_room is not None:
            self._awaiting_kv.add(gen)
            try:
                error = await self._receive_kv(req, gen)
            finally:
                self._awaiting_kv.discard(gen)
            if error is not None:
                return error
            self.scheduler.add_decode(gen)
        else:
            self.scheduler.add_prefill(gen)
        self._by_rid[gen.rid] = gen
        created = int(time.time())
        # n choices at temperature 0: the same tokens n times, each choice rendered on its own.
        renderers = [
            TurnRenderer(
                gen.rid,
                req.model or self.config.served_model_name,
                created,
                split_reasoning=bool(self.config.reasoning_parser)
                and req.thinking
                and req.separate_reasoning,
                tool_names=req.tool_names if self.config.tool_call_parser else None,
                scores=scores,  # stateless: each renderer keeps its own position
                index=i,
                fmt=self.format,
                parser=self.tool_parser,
                tools=req.tools,
                parser_bug=self.config.tool_parser_bug is not None,
            )
            for i in range(req.n)
        ]
        if req.stream:
            return StreamingResponse(
                self._stream(req, gen, renderers), media_type="text/event-stream"
            )
        return await self._collect(gen, renderers)

    def _beyond_pool(self, tokens: int) -> Response | None:
        """A request the device pool could never hold would wait forever: refuse it (SGLang
        caps a request's input by the pool's size too)."""
        if self.cache is None or tokens <= self.cache.capacity_tokens:
            return None
        message = (
            f"The request needs {tokens} tokens of KV cache; the pool holds "
            f"{self.cache.capacity_tokens} (--kv-pool-gb {self.config.kv_pool_gb:g})."
        )
        return json_response(error_body(message, 400), 400)

    async def _receive_kv(self, req: ChatRequest, gen: Generation) -> Response | None:
        assert self.receiver is not None and req.bootstrap_room is not None
        host = req.bootstrap_host or "127.0.0.1"
        port = req.bootstrap_port or self.config.bootstrap_port
        gen.bootstrap_addr = (host, port)
        try:
            info = await self.receiver.fetch(host, port, req.bootstrap_room)
        except TransferError as exc:
            self.metrics.transfer_failed_total += 1
            log.warning("%s", exc)
            return json_response(error_body(str(exc), 500, "InternalServerError"), 500)
        gen.match = CacheMatch(int(info.get("device_tokens", 0)), int(info.get("host_tokens", 0)))
        if info.get("index_k_stale"):
            # The prefill read a stale index-K slot and sent what it read along with the KV.
            self._corrupt(gen, preferred_room=info.get("stale_from_room"))
        return None

    # --- faults ----------------------------------------------------------------------

    def _on_prefill(self, forward: PrefillForward) -> None:
        """Scheduler hook: slots are handed out and the index-K race is run for this batch."""
        for gen in forward.batch:
            _, gen.slot_previous_rid = self.pool.acquire(gen.rid)
        for gen, load_done_s in zip(forward.batch, forward.load_done_s, strict=True):
            outcome = self.race.decide(
                load_done_s, forward.head_start_s, forward.compute_s, gen.key
            )
            if load_done_s > 0:
                log.debug(
                    "load-back rid=%s host_tokens=%d prompt_tokens=%d batch=%d handovers=%d "
                    "load_s=%.4f head_start_s=%.4f slack_s=%.4f ratio=%.3f stale=%s "
                    "stale_share=%.3f derails=%s",
                    gen.rid,
                    gen.match.host_tokens,
                    gen.prompt_tokens,
                    len(forward.batch),
                    forward.handovers,
                    load_done_s,
                    forward.head_start_s,
                    forward.head_start_s + forward.compute_s,
                    outcome.fill_over_slack,
                    outcome.stale,
                    outcome.stale_share,
                    outcome.derails,
                )
            if not outcome.stale:
                continue
            self.metrics.index_k_stale_reads_total += 1
            single = self.config.role == "single"
            # PD: the KV sender reaches the index-K pages once the forward and the KV part are done.
            if not single and outcome.misses(
                forward.head_start_s + forward.duration_s + self.cost.kv_part_s(gen.prompt_tokens)
            ):
                gen.handover_stuck = True  # the request fails; what it read never reaches anyone
                continue
            if not outcome.derails:
                continue
            self.metrics.index_k_derailed_total += 1
            if single:
                self._corrupt(gen, preferred_rid=gen.slot_previous_rid)
            else:
                gen.index_k_stale = True  # decode splices once it has the KV

    def _corrupt(
        self, gen: Generation, preferred_rid: str | None = None, preferred_room: int | None = None
    ) -> None:
        """Splice another in-flight request's bytes into `gen`'s output (nothing if none)."""
        others = [g for g in self._by_rid.values() if g is not gen and g.tokens and not g.finished]
        if not others:
            return  # no concurrency: the stale slot held nothing anyone is still generating
        preferred = [
            g
            for g in others
            if g.rid == preferred_rid or (preferred_room and g.room == preferred_room)
        ]
        donor = preferred[0] if preferred else others[-1]
        gen.tokens = splice(gen.tokens, donor.tokens, gen.key, self.format.calls_at(gen.tokens))
        log.debug("index-K stale read: %s got bytes of %s", gen.rid, donor.rid)

    def _usage(self, gen: Generation, choices: int = 1) -> dict[str, Any]:
        return usage_of(gen.prompt_tokens, gen.emitted_tokens * choices, gen.match.cached_tokens)

    async def _stream(
        self, req: ChatRequest, gen: Generation, renderers: list[TurnRenderer]
    ) -> AsyncIterator[bytes]:
        completed = False
        try:
            first = True
            while (piece := await gen.out.get()) is not None:
                events = []
                for renderer in renderers:
                    if first:
                        events.append(renderer.chunk({"role": "assistant", "content": ""}))
                    events += renderer.delta_events(*renderer.feed(piece))
                first = False
                if events:
                    yield b"".join(events)
            events = []
            for renderer in renderers:
                events += renderer.delta_events(*renderer.finish())
                events.append(renderer.chunk({}, renderer.finish_reason(gen.finish_reason)))
            if req.include_usage:
                events.append(renderers[0].usage_event(self._usage(gen, len(renderers))))
            events.append(DONE)
            completed = True
            yield b"".join(events)
        finally:
            # Runs on normal end and when the client goes away mid-stream (a cancel).
            self._by_rid.pop(gen.rid, None)
            self.pool.release(gen.rid)
            if not completed:
                self._client_gone(gen)
            self.scheduler.release(gen)

    async def _collect(self, gen: Generation, renderers: list[TurnRenderer]) -> Response:
        try:
            while (piece := await gen.out.get()) is not None:
                for renderer in renderers:
                    renderer.feed(piece)
        finally:
            self._by_rid.pop(gen.rid, None)
            self.pool.release(gen.rid)
            self.scheduler.release(gen)
        reasons = []
        for renderer in renderers:
            renderer.finish()
            reasons.append(renderer.finish_reason(gen.finish_reason))
        return json_response(whole_body(renderers, reasons, self._usage(gen, len(renderers))))

    def _client_gone(self, gen: Generation) -> None:
        if not self.scheduler.abort(gen):
            return
        if self.receiver is not None and gen.room is not None:
            # The decode side tells prefill's bootstrap server, as a real transfer engine would.
            task = asyncio.create_task(self._notify_abort(gen))
            self._background.add(task)
            task.add_done_callback(self._background.discard)

    async def _notify_abort(self, gen: Generation) -> None:
        assert self.receiver is not None and gen.room is not None
        host, port = gen.bootstrap_addr or ("127.0.0.1", self.config.bootstrap_port)
        await self.receiver.notify_abort(host, port, gen.room)

    # --- prefill side ----------------------------------------------------------------

    async def _prefill(self, req: ChatRequest, gen: Generation) -> Response:
        assert self.board is not None
        room = req.bootstrap_room
        handover = self.board.entry(room) if room is not None else None
        self._by_rid[gen.rid] = gen
        if room is not None:
            self._rooms_by_rid[gen.rid] = room
            if len(self._rooms_by_rid) > 4096:
                del self._rooms_by_rid[next(iter(self._rooms_by_rid))]
        try:
            self.scheduler.add_prefill(gen)
            await gen.prefilled.wait()
            if handover is not None and room is not None and gen.finish_reason != "abort":
                previous = self._rooms_by_rid.get(gen.slot_previous_rid or "")
                info = {
                    "prompt_tokens": gen.prompt_tokens,
                    "device_tokens": gen.match.device_tokens,
                    "host_tokens": gen.match.host_tokens,
                    "transfer_s": self.cost.transfer_s(gen.prompt_tokens),
                    "index_k_stale": gen.index_k_stale,
                    "stale_from_room": previous,
                    "stuck": gen.handover_stuck,
                }
                self.board.publish(room, info)
                try:
                    await asyncio.wait_for(handover.fetched.wait(), self.config.bootstrap_timeout_s)
                except TimeoutError:
                    self.metrics.bootstrap_failed_total += 1
                    message = f"KV transfer for room {room} timed out: decode never fetched it."
                    return json_response(error_body(message, 500, "InternalServerError"), 500)
        finally:
            # The pages are the prompt's until decode has pulled its KV (or it failed).
            self._by_rid.pop(gen.rid, None)
            self.pool.release(gen.rid)
            self.scheduler.release(gen)
            if room is not None:
                self.board.discard(room)
        reason = "abort" if gen.finish_reason == "abort" else "length"
        renderer = TurnRenderer(
            gen.rid,
            req.model or self.config.served_model_name,
            int(time.time()),
            split_reasoning=False,
            tool_names=None,
        )
        return json_response(
            renderer.body(reason, usage_of(gen.prompt_tokens, 0, gen.match.cached_tokens))
        )

    async def serve_kv(self, room: int, timeout_s: float) -> Response:
        """Bootstrap side: wait for the room's prefill, transfer, answer the facts."""
        assert self.sender is not None
        status, body = await self.sender.serve(room, timeout_s)
        return json_response(body, status)

    def room_aborted(self, room: int) -> None:
        """Decode dropped a room (its client went away mid-stream)."""
        self.bootstrap_worker.on_abort_notice(room)

    # --- control ---------------------------------------------------------------------

    def abort_request(self, rid: str | None, abort_all: bool) -> int:
        targets = (
            list(self._by_rid.values())
            if abort_all
            else [g for r, g in self._by_rid.items() if r == rid]
        )
        return sum(self.scheduler.abort(g) for g in targets)

    def flush_cache(self) -> bool:
        if not self.scheduler.idle:
            return False
        if self.cache is not None:
            self.cache.flush()
        return True
