/**
 * kv-store: the off-heap latent-KV object store between the prefill and the decode leg.
 *
 * <p><b>Store logic</b> ({@link io.moemesh.kvstore.KvObjectStore}, no framework): Mooncake semantics.
 * {@code putStart} reserves memory → rows in any order → {@code end} commits an immutable object (or
 * {@code revoke} frees it); readers never see a half-written object. Every object has a lease counted from
 * its commit; {@code get} pins it (pinned objects are never freed). {@code release} and lease expiry make an
 * object evictable and no longer gettable by key; a released object stays as a {@code LookupPrefix} hint
 * ({@code gettable=false}) until a put needs its memory, an expired one until the reaper frees it. The
 * reaper also revokes a put that sent no frame for {@code put-idle-timeout}, so a stuck writer cannot hold
 * memory. Eviction takes released/expired unpinned objects, least recently used first, and never a live one:
 * a store full of live objects rejects the put (RESOURCE_EXHAUSTED, with the figures). A key held by a
 * released or expired object may be put again (the old object is dropped).
 *
 * <p><b>Threads</b>: gRPC callbacks arrive on Vert.x event loops and do no copying there. Unary calls only
 * touch metadata under the store's short lock. The Put and Get streams move rows on the {@link
 * io.moemesh.kvstore.CopyExecutor} pool: one frame requested at a time on Put, frames built only while the
 * transport is ready on Get, so neither direction queues a whole object on the heap. Each row is copied once
 * between a protobuf message and off-heap memory ({@link java.lang.foreign.Arena}, one shared arena per
 * object, closed outside the store lock because closing is a thread handshake). The reaper has its own thread.
 */
package io.moemesh.kvstore;
