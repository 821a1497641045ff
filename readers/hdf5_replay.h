// hdf5_replay: the replay engine of the hdf5 format (dlio_ext.hdf5_engine: replay, the default; docs/io.md).
// libhdf5 re-parses a file's superblock, object headers and chunk index for every sample (DLIO's on_demand reader
// opens the file per sample); the reads it issues for one sample are the same for every sample of the file but for
// the data, so the engine records them once and replays them without libhdf5.
//
// Contract:
//  - Per file, per reader (a reader is one loader thread's, for one epoch): the file's first sample is read by the
//    libhdf5 engine (hdf5_internal.h) with the driver's requests recorded (storage/hdf5_vfd.h set_asked_log), and
//    each dataset's storage layout learnt while it is open: contiguous (address, size), or chunked (chunk shape,
//    filter, every chunk's address, stored size and filter mask). Up to 256 chunks from H5Dget_chunk_info_by_coord
//    with the driver probing (no I/O: it succeeds only when the chunk index is all in libhdf5's memory after one
//    sample, i.e. every sample reads the same index blocks); above, from the fixed-array index blocks the recorded
//    reads returned (FAHD/FADB, checksummed; libhdf5 1.10's query walks the index from its start, n^2/2 steps). A
//    paged fixed array (over 1,024 chunks: a sample's lookup reads the page of its chunks) gets a plan per page (or
//    pair of pages a chunk row spans), each recorded from a sample of it, its entries from the recorded page.
//  - The plan: the recorded open, reads and close, each read either fixed (metadata) or the j-th data read of
//    records_k, whose range the layout gives for any sample: contiguous, [addr + i * S, S) or, where libhdf5 sieves
//    (files, S <= the 64 KiB sieve buffer), min(sieve, eoa - off, dataset end - off) bytes from there; chunked, every
//    chunk of the sample's chunk row in chunk order, whole (libhdf5 reads a chunk whole when it is filtered or fits
//    its 1 MiB chunk cache).
//  - Proof: a plan stays a candidate until a later sample of it with other data reads was read by libhdf5 and its
//    recorded requests equal the plan's for that sample, open, offsets, lengths, order and close; only then do its
//    samples replay. A mismatch rebuilds the candidate from that sample (3 per file), then the file stays with
//    libhdf5. Samples whose data reads equal the recorded sample's replay the recording as it is.
//  - libhdf5 stays for: datasets not allocated, unfiltered chunks larger than the chunk cache (libhdf5 reads parts
//    of them through the sieve buffer), extensible-array and v2 B-tree chunk indexes (unlimited axes) not all in
//    memory after one sample, paged indexes with several datasets per record, chunks not allocated, more than one
//    filter or a filter other than gzip (deflate), lzf or szip, lzf or szip whose library cannot be loaded,
//    compact and virtual layouts.
//  - Replay issues the plan's requests through the same driver calls (Hdf5StorageAccess::Open/Read/Close): the same
//    reads reach the storage, counted the same (the kept head of an object too). Chunks are decompressed as libhdf5
//    does (zlib inflate, lzf_decompress, SZ_BufftoBuffDecompress) and the sample's part copied out; the time spent
//    decompressing is kept apart (Hdf5DecodeNanos, hdf5.h).
//  - No allocation per sample on the replay path: buffers are sized when a plan is made and only grow; a plan is
//    made (allocated) once per file per reader, and a reader's plans are kept up to 64 MiB (then dropped).
// Thread-safety: one reader per loader thread; replay takes no lock (libhdf5's global lock only on the recorded
// samples), so loader threads replay in parallel.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "readers/format.h"

namespace dlio {
class Hdf5StorageAccess;  // storage/hdf5_vfd.h
}  // namespace dlio

namespace dlio::hdf5_internal {

std::unique_ptr<SampleReader> NewHdf5ReplayReader(int64_t datasets, StorageTarget target);

// Replay statistics of a reader made by NewHdf5ReplayReader (zeros for any other reader).
struct ReplayCounters {
  uint64_t recorded = 0;      // samples read by libhdf5 while a plan was made or proven
  uint64_t replayed = 0;      // samples replayed
  uint64_t fallback = 0;      // samples read by libhdf5 because their file's layout is not provable
  uint64_t decode_ns = 0;     // time spent decompressing chunks on the replay path
  std::string last_fallback;  // why the last file fell back ("" = none did)
  uint64_t plans_dropped = 0;  // times the plans outgrew their limit and were dropped (see SetPlanLimit)
};
ReplayCounters ReplayCountersOf(const SampleReader& reader);
// The memory a replay reader's plans may take (64 MiB unless set; chunk tables are 24 bytes per chunk): past it
// they are dropped, and files met again are recorded again. For tests; other readers ignore it.
void SetPlanLimit(SampleReader& reader, size_t bytes);
// The driver of an hdf5 reader of either engine (made at the first use), so tests can watch its requests
// (Hdf5StorageAccess::set_issued_log). Errors: not an hdf5 reader; the storage's.
absl::StatusOr<Hdf5StorageAccess*> DriverOf(SampleReader& reader);

}  // namespace dlio::hdf5_internal
