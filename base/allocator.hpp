// Process-wide allocator settings for programs that move many large buffers (object bodies).
// A library does not change them on its own: cairn_s3_bench calls this at start, and a service
// embedding cairn's S3 client may. The cairn command does not: with it, a checkpoint's peak
// RSS grew with the graph (266 MiB for 512 MiB, 296 MiB for 1 GiB; 267 and 269 without).
#pragma once

namespace cairn {

// glibc malloc serves a request above its mmap threshold (128 KiB at start, raised
// dynamically up to 32 MiB) with a fresh mapping, and returns freed memory at the top of its
// heap above the trim threshold to the kernel. Every new 8 MiB body then costs 2,048 page
// faults on first touch, which on this machine were the largest part of a download's CPU
// (measured: 4.7 to 6.8 CPU s/GiB for GETs to memory before, 3.0 to 3.2 after). This serves
// buffers under 16 MiB (object bodies, journal chunks) from the heap, where freed ones are
// reused, and keeps up to 256 MiB free at the heap's top. Larger buffers (segments, 32 MiB by
// default) are still mapped and unmapped one by one, as before. Returns false where the
// allocator is not glibc's or refused a setting.
bool keepLargeBuffersForReuse();

}  // namespace cairn
