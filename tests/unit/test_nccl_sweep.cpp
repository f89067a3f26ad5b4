// The arithmetic behind the nccl.* figures: nccl-tests' bus-bandwidth factors and buffer shapes,
// the size ladder, parameters and the hang drill switch.
#include <catch2/catch.hpp>

#include "worker/check.hpp"
#include "worker/checks/nccl/params.hpp"
#include "worker/checks/nccl/sweep.hpp"

using namespace kiln::worker::nccl;

TEST_CASE("bus bandwidth factors are nccl-tests'", "[nccl]") {
  CHECK(bus_factor(Coll::AllReduce, 2) == Approx(1.0));
  CHECK(bus_factor(Coll::AllReduce, 8) == Approx(1.75));
  CHECK(bus_factor(Coll::AllGather, 8) == Approx(0.875));
  CHECK(bus_factor(Coll::ReduceScatter, 4) == Approx(0.75));
  CHECK(bus_factor(Coll::AllToAll, 2) == Approx(0.5));
  CHECK(bus_factor(Coll::Broadcast, 16) == Approx(1.0));
  CHECK(bus_factor(Coll::SendRecv, 16) == Approx(1.0));
  CHECK(bus_factor(Coll::AllReduce, 1) == Approx(0.0));
  CHECK_THROWS(bus_factor(Coll::AllReduce, 0));
}

TEST_CASE("all_reduce of 1 GiB in 3.24 ms on 2 GPUs is 331 GB/s bus bandwidth", "[nccl]") {
  // A line measured on the 2-GPU H200 machine.
  const Shape s = shape_for(Coll::AllReduce, 1ull << 30, 4, 2);
  CHECK(s.count == (1ull << 28));
  const Bandwidth b = bandwidth(Coll::AllReduce, s, 3240.11e-6, 2);
  CHECK(b.algbw_gbs == Approx(331.39).epsilon(1e-3));
  CHECK(b.busbw_gbs == Approx(331.39).epsilon(1e-3));
  CHECK(b.time_us == Approx(3240.11));
}

TEST_CASE("gather/scatter shapes: size is the full buffer, count the per-rank chunk", "[nccl]") {
  const Shape ag = shape_for(Coll::AllGather, 1 << 20, 4, 4);
  CHECK(ag.count == (1 << 20) / 4 / 4);
  CHECK(ag.send_bytes == (1 << 18));
  CHECK(ag.recv_bytes == (1 << 20));
  CHECK(ag.line_bytes() == (1 << 20));
  CHECK(ag.inplace_send_stride == ag.send_bytes);
  CHECK(ag.alg_bytes == (1 << 20));

  const Shape rs = shape_for(Coll::ReduceScatter, 1 << 20, 4, 4);
  CHECK(rs.send_bytes == (1 << 20));
  CHECK(rs.recv_bytes == (1 << 18));
  CHECK(rs.inplace_recv_stride == rs.recv_bytes);

  const Shape a2a = shape_for(Coll::AllToAll, 1 << 20, 4, 8);
  CHECK(a2a.count == (1 << 20) / 4 / 8);
  CHECK(a2a.send_bytes == a2a.recv_bytes);
}

TEST_CASE("chunks round down to 16 bytes, so tiny gathers are empty lines", "[nccl]") {
  CHECK(shape_for(Coll::AllGather, 8, 4, 2).count == 0);   // nccl-tests prints size 0 there
  CHECK(shape_for(Coll::AllGather, 32, 4, 2).count == 4);  // 16 B per rank
  CHECK(shape_for(Coll::AllGather, 48, 4, 2).count == 4);  // 24 B per rank rounds down to 16
  CHECK(shape_for(Coll::ReduceScatter, 100, 4, 3).count == 8);
  CHECK(shape_for(Coll::AllReduce, 8, 4, 2).count == 2);
}

TEST_CASE("size ladder from 8 B to 8 GiB by 2 has 31 lines", "[nccl]") {
  auto l = size_ladder(8, 8ull << 30, 2);
  REQUIRE(l.size() == 31);
  CHECK(l.front() == 8);
  CHECK(l.back() == (8ull << 30));
  CHECK(size_ladder(8, 100, 4) == std::vector<std::size_t>{8, 32});
  CHECK(size_ladder(1, 1, 2) == std::vector<std::size_t>{1});
  CHECK_THROWS(size_ladder(0, 8, 2));
  CHECK_THROWS(size_ladder(16, 8, 2));
  CHECK_THROWS(size_ladder(8, 16, 1));
  // Never overflows or loops at the top of the range.
  CHECK(size_ladder(1ull << 62, ~0ull, 2).size() == 2);
}

TEST_CASE("iterations rotate through the buffer in whole operations", "[nccl]") {
  CHECK(rotation_offset(1 << 20, 8 << 20, 0) == 0);
  CHECK(rotation_offset(1 << 20, 8 << 20, 3) == (3 << 20));
  CHECK(rotation_offset(1 << 20, 8 << 20, 9) == (1 << 20));
  CHECK(rotation_offset(8 << 20, 8 << 20, 5) == 0);
  CHECK(rotation_offset(0, 8 << 20, 5) == 0);
  for (int i = 0; i < 100; ++i) CHECK(rotation_offset(3000, 10000, i) + 3000 <= 10000);
}

TEST_CASE("sizes parse like nccl-tests' -b/-e", "[nccl]") {
  CHECK(parse_bytes("8") == 8);
  CHECK(parse_bytes("64K") == 65536);
  CHECK(parse_bytes("1M") == (1 << 20));
  CHECK(parse_bytes("8G") == (8ull << 30));
  CHECK(parse_bytes("8GB") == (8ull << 30));
  CHECK_THROWS(parse_bytes("8Q"));
  CHECK_THROWS(parse_bytes(""));
}

TEST_CASE("sweep parameters are validated once", "[nccl]") {
  auto p = parse_sweep_params(nlohmann::json::parse(R"({"min_bytes":8,"max_bytes":"8G","iters":20,"placement":"out"})"));
  CHECK(p.max_bytes == (8ull << 30));
  CHECK(p.out_of_place);
  CHECK_FALSE(p.in_place);
  CHECK_FALSE(p.check);
  auto d = parse_sweep_params(nlohmann::json::object());
  CHECK(d.in_place);
  CHECK(d.out_of_place);
  CHECK_THROWS(parse_sweep_params(nlohmann::json::parse(R"({"placement":"sideways"})")));
  CHECK_THROWS(parse_sweep_params(nlohmann::json::parse(R"({"iters":0})")));
  CHECK_THROWS(parse_sweep_params(nlohmann::json::parse(R"({"min_bytes":"1G","max_bytes":"1M"})")));
}

TEST_CASE("the hang drill applies to the named test only", "[nccl]") {
  auto spec = nlohmann::json::parse(R"({"nccl":{"hang_rank":1,"test":"nccl.all_reduce","at_bytes":"1M"}})");
  auto d = hang_drill(spec, "nccl.all_reduce");
  REQUIRE(d);
  CHECK(d->world_rank == 1);
  CHECK(d->at_bytes == (1 << 20));
  CHECK_FALSE(d->silent);
  CHECK_FALSE(hang_drill(spec, "nccl.all_gather"));
  CHECK_FALSE(hang_drill(nlohmann::json::object(), "nccl.all_reduce"));
  CHECK(hang_drill(nlohmann::json::parse(R"({"nccl":{"hang_rank":0}})"), "nccl.broadcast"));
}

TEST_CASE("the check pattern sums exactly in float", "[nccl]") {
  // Every element is a small integer, so a sum over a large group has no rounding to tolerate.
  for (std::size_t i : {0ul, 1ul, 12345ul, (1ul << 31) + 7}) {
    double sum = 0;
    float fsum = 0;
    for (int r = 0; r < 1024; ++r) {
      const float v = pattern_value(r, i);
      CHECK(v >= 0);
      CHECK(v < 61);
      sum += v;
      fsum += v;
    }
    CHECK(static_cast<double>(fsum) == sum);
  }
  CHECK(pattern_value(0, 1) != pattern_value(1, 1));
}

TEST_CASE("a collective over one rank is a SKIP with its reason, not a 0 GB/s pass", "[nccl]") {
  // busbw carries the n-1 factor, so one GPU alone reads 0.00 GB/s; kiln run --profile health on a
  // one-GPU node showed that as its headline and passed. Nothing is measured, so nothing may pass.
  kiln::NodeInfo node;
  node.host = "n1";
  kiln::worker::Faults faults;
  for (const std::string key : {"nccl.all_reduce", "nccl.all_gather", "nccl.reduce_scatter", "nccl.alltoall",
                                "nccl.broadcast", "nccl.sendrecv"}) {
    auto check = kiln::worker::Registry::instance().create(key);
    REQUIRE(check);
    kiln::worker::Context ctx{node, MPI_COMM_SELF, 0, 0, 1, {0}, 1,
                              kiln::validate_params(check->spec(), nlohmann::json::object()),
                              std::chrono::steady_clock::now() + std::chrono::seconds(10), faults};
    struct Sink : kiln::worker::ResultSink {
      std::vector<kiln::Result> results;
      void emit(kiln::Result r) override { results.push_back(std::move(r)); }
    } sink;
    check->run(ctx, sink);
    INFO(key);
    REQUIRE(sink.results.size() == 1);
    CHECK(sink.results[0].status == kiln::Status::Skip);
#if KILN_HAVE_NCCL
    CHECK(sink.results[0].reason.find("one rank") != std::string::npos);
#endif
  }
}
