// Pure arithmetic of the NCCL collective sweeps: buffer shapes per collective, bus-bandwidth
// factors and the size ladder. No CUDA, NCCL or MPI here, so the unit tests check it on any machine.
//
// Shapes and factors follow nccl-tests' conventions so that our figures can be put beside its
// output column for column: the "size" of a line is max(send bytes, receive bytes) of one rank, the
// element count handed to NCCL is the per-rank count, and busbw = algbw * factor, where the factor
// turns algorithm bandwidth into what each link of a ring must carry.
#pragma once

#include "common/checks.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace kiln::worker::nccl {

enum class Coll { AllReduce, AllGather, ReduceScatter, AllToAll, Broadcast, SendRecv };

inline std::string coll_name(Coll c) {
  switch (c) {
    case Coll::AllReduce: return "all_reduce";
    case Coll::AllGather: return "all_gather";
    case Coll::ReduceScatter: return "reduce_scatter";
    case Coll::AllToAll: return "alltoall";
    case Coll::Broadcast: return "broadcast";
    case Coll::SendRecv: return "sendrecv";
  }
  return "unknown";
}

// busbw / algbw. all_reduce moves 2(n-1)/n of the data over each link (reduce-scatter then
// all-gather); all_gather, reduce_scatter and alltoall (n-1)/n; broadcast and send/recv 1.
inline double bus_factor(Coll c, int nranks) {
  if (nranks <= 0) throw std::invalid_argument("bus_factor: nranks must be positive");
  const double n = nranks;
  switch (c) {
    case Coll::AllReduce: return 2.0 * (n - 1) / n;
    case Coll::AllGather:
    case Coll::ReduceScatter:
    case Coll::AllToAll: return (n - 1) / n;
    case Coll::Broadcast:
    case Coll::SendRecv: return 1.0;
  }
  return 1.0;
}

// What one rank hands to NCCL for a nominal size, in elements and bytes.
struct Shape {
  std::size_t count = 0;        // the count argument of the NCCL call
  std::size_t send_bytes = 0;   // bytes read from this rank's send buffer
  std::size_t recv_bytes = 0;   // bytes written to this rank's receive buffer
  // In-place: where the send data lives inside the receive buffer, in bytes, per rank index
  // (all_gather: rank r's contribution sits at r*send_bytes; reduce_scatter: rank r's result
  // lands at r*recv_bytes). Zero for the collectives whose in-place buffers coincide.
  std::size_t inplace_send_stride = 0;
  std::size_t inplace_recv_stride = 0;
  // Bytes one operation moves in the sense of algbw (nccl-tests' count * typesize, times the
  // number of ranks for the gather/scatter family).
  std::size_t alg_bytes = 0;
  std::size_t line_bytes() const { return std::max(send_bytes, recv_bytes); }
};

// Shapes for a nominal size of `bytes`, elements of `elt` bytes, `nranks` ranks. The per-rank
// chunk of the gather/scatter family is rounded down to a multiple of 16 bytes, as nccl-tests
// does, so some small sizes have an empty shape (count 0).
inline Shape shape_for(Coll c, std::size_t bytes, std::size_t elt, int nranks) {
  if (elt == 0 || nranks <= 0) throw std::invalid_argument("shape_for: bad element size or rank count");
  const std::size_t n = static_cast<std::size_t>(nranks);
  const std::size_t count = bytes / elt;
  const std::size_t align = std::max<std::size_t>(1, 16 / elt);
  const std::size_t chunk = (count / n) & ~(align - 1);
  Shape s;
  switch (c) {
    case Coll::AllReduce:
    case Coll::Broadcast:
    case Coll::SendRecv:
      s.count = count;
      s.send_bytes = s.recv_bytes = count * elt;
      s.alg_bytes = count * elt;
      break;
    case Coll::AllGather:
      s.count = chunk;
      s.send_bytes = chunk * elt;
      s.recv_bytes = chunk * n * elt;
      s.inplace_send_stride = chunk * elt;
      s.alg_bytes = chunk * n * elt;
      break;
    case Coll::ReduceScatter:
      s.count = chunk;
      s.send_bytes = chunk * n * elt;
      s.recv_bytes = chunk * elt;
      s.inplace_recv_stride = chunk * elt;
      s.alg_bytes = chunk * n * elt;
      break;
    case Coll::AllToAll:
      s.count = chunk;  // elements sent to each peer
      s.send_bytes = s.recv_bytes = chunk * n * elt;
      s.alg_bytes = chunk * n * elt;
      break;
  }
  return s;
}

struct Bandwidth {
  double time_us = 0;
  double algbw_gbs = 0;  // GB/s, 1e9 bytes
  double busbw_gbs = 0;
};

inline Bandwidth bandwidth(Coll c, const Shape& s, double seconds, int nranks) {
  Bandwidth b;
  b.time_us = seconds * 1e6;
  if (seconds <= 0) return b;
  b.algbw_gbs = static_cast<double>(s.alg_bytes) / 1e9 / seconds;
  b.busbw_gbs = b.algbw_gbs * bus_factor(c, nranks);
  return b;
}

// min, min*factor, ... up to and including max (nccl-tests' -b/-e/-f). factor must be >= 2 so the
// ladder always advances; a ladder is capped at 64 steps as a guard against a bad parameter.
inline std::vector<std::size_t> size_ladder(std::size_t min_bytes, std::size_t max_bytes, std::size_t factor) {
  if (min_bytes == 0) throw std::invalid_argument("min_bytes must be at least 1");
  if (max_bytes < min_bytes) throw std::invalid_argument("max_bytes must be >= min_bytes");
  if (factor < 2) throw std::invalid_argument("factor must be at least 2");
  std::vector<std::size_t> out;
  for (std::size_t s = min_bytes; s <= max_bytes && out.size() < 64; s *= factor) {
    out.push_back(s);
    if (s > max_bytes / factor) break;  // next step would overflow or pass max
  }
  return out;
}

// Offset of iteration `iter` inside a buffer of `buffer_bytes`: successive iterations walk through
// the buffer in steps of one operation's footprint, so a small operation does not run from a hot
// L2 every time (the same rotation nccl-tests applies).
inline std::size_t rotation_offset(std::size_t footprint, std::size_t buffer_bytes, int iter) {
  if (footprint == 0 || footprint > buffer_bytes) return 0;
  const std::size_t steps = buffer_bytes / footprint;
  return footprint * (static_cast<std::size_t>(iter) % steps);
}

enum class Placement { OutOfPlace, InPlace };
inline std::string placement_name(Placement p) { return p == Placement::InPlace ? "in" : "out"; }

// Element i of rank r's send data in the data check (pattern.cu computes the same on the GPU).
// Small integers in float, so sums over any realistic group are exact and a check needs no tolerance.
inline float pattern_value(int rank, std::size_t i) {
  return static_cast<float>((i * 31u + static_cast<std::size_t>(rank) * 17u) % 61u);
}

// nccl-tests' -b/-e sizes ("8", "64K", "8G", "8GB"): the size syntax every check's parameters use.
inline std::size_t parse_bytes(const std::string& text) { return static_cast<std::size_t>(kiln::parse_size(text)); }

}  // namespace kiln::worker::nccl
