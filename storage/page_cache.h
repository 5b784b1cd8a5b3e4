// storage/page_cache.h: whether reads would wait for the disk, and bringing
// their bytes into the page cache from a thread that may wait.
//
// A fetch's record bytes leave with sendfile(2) from a network thread, and
// the read that finds them (the offset index, then batch headers read from
// the .log) runs there too. When the bytes are in the page cache that costs
// little; when they are not (a reader replaying old data), both wait for
// the disk on the network thread, and every other connection of that thread
// waits with them: hot readers slow down by what the cold one reads. So the
// fetch handler (broker/handlers/fetch.cc) asks Log::read_may_block() of
// each partition before reading; if one may block, the whole fetch is read
// on the I/O pool instead, and there read_is_cold() and warm_read() bring in
// whatever of the slices the read itself did not, so that the sendfile that
// follows finds every page.
//
// The probes are preadv2(RWF_NOWAIT) of one byte, which fails with EAGAIN
// instead of reading a page that is not cached: no copy of the records.
// Read_may_block probes the index position for the offset and max_bytes past
// it; read_is_cold() the first and last byte of each slice. Pages between
// are not probed: a reader going forward finds a read's start in the
// kernel's readahead of its last one and its end cold. Where the kernel or
// file system cannot tell (other errors), a byte counts as cached: the read
// then behaves as before. Files without an fd (in memory) are always cached.
//
// warm_read() asks the kernel to read each slice ahead (POSIX_FADV_WILLNEED,
// one large request instead of page-sized ones) and reads it through the
// page cache in 256 KiB pieces into a per-thread buffer, so it returns once
// the pages are there. What it holds is that buffer, whatever the read's size.
//
// Thread-safety: pure functions of their arguments (the buffer is
// thread_local); any thread, but warm_read() blocks on the disk.
#pragma once

#include <cstdint>

#include "storage/log.h"
#include "storage/status.h"

namespace ciuickafka::storage {

// Whether the byte at offset of the file fd is in the page cache; true where
// the kernel cannot tell.
bool byte_cached(int fd, uint64_t offset);

// The first or last byte of one of r's slices is not in the page cache.
bool read_is_cold(const ReadResult& r);

// Reads r's slices through the page cache; the bytes read (r.bytes unless a
// file ended early), or the first read error.
Result<uint64_t> warm_read(const ReadResult& r);

}  // namespace ciuickafka::storage
