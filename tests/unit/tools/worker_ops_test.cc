// tests/unit/tools/worker_ops_test.cc: the worker's operations (tools/worker_ops.h): the bytes
// each message has on the wire, round trips, and decoders that name the field they refuse.
#include "tools/worker_ops.h"

#include <gtest/gtest.h>

#include "tools/registry.h"

namespace moat::tools {
namespace {

TEST(WorkerOps, EachMessageHasTheBytesTheHeaderDocuments) {
  EXPECT_EQ(encode(ResolveRequest{"a.txt", "/ws", {"rg"}}),
            R"({"cwd":"/ws","op":"resolve","path":"a.txt","which":["rg"]})");
  EXPECT_EQ(encode(OpRequest{"read", "/ws/a.txt", {{"offset", 2}}}),
            R"({"args":{"offset":2},"op":"read","path":"/ws/a.txt"})");
  EXPECT_EQ(encode(ResolveReply{.path = "/ws/a", .exists = true, .is_dir = false, .program = ""}),
            R"({"exists":true,"isDir":false,"path":"/ws/a","program":""})");
  EXPECT_EQ(encode(OpReply{.error = "no such file"}), R"({"error":"no such file"})");
  EXPECT_EQ(encode(OpReply{.result = ToolResult::text("hi")}),
            R"({"content":[{"text":"hi","type":"text"}],"details":{},"isError":false})");
}

TEST(WorkerOps, RequestsRoundTripWithBytesThatAreNotUtf8) {
  const std::string path = "/ws/caf\xe9/a";  // Latin-1: not UTF-8
  auto resolve = decode_worker_request(encode(ResolveRequest{path, "/ws", {"rg", "grep"}}));
  ASSERT_TRUE(resolve) << resolve.error().message();
  const auto& r = std::get<ResolveRequest>(*resolve);
  EXPECT_EQ(r.path, path);
  EXPECT_EQ(r.which, (std::vector<std::string>{"rg", "grep"}));
  auto op = decode_worker_request(encode(OpRequest{"write", path, {{"content", "x\xff"}}}));
  ASSERT_TRUE(op) << op.error().message();
  EXPECT_EQ(std::get<OpRequest>(*op).path, path);
  EXPECT_EQ(std::get<OpRequest>(*op).args["content"], "x\xff");
}

TEST(WorkerOps, RepliesRoundTripAndCarryTheWorkersError) {
  auto ok = decode_resolve_reply(encode(ResolveReply{.path = "/ws", .exists = true,
                                                     .is_dir = true, .program = "/usr/bin/rg"}));
  ASSERT_TRUE(ok) << ok.error().message();
  EXPECT_TRUE(ok->is_dir);
  EXPECT_EQ(ok->program, "/usr/bin/rg");
  auto failed = decode_resolve_reply(encode(ResolveReply{.error = "ELOOP"}));
  ASSERT_TRUE(failed);
  EXPECT_EQ(failed->error, "ELOOP");
  auto result = decode_op_reply(encode(OpReply{.result = ToolResult::error("bad")}));
  ASSERT_TRUE(result);
  EXPECT_TRUE(result->result.is_error);
}

TEST(WorkerOps, DecodersNameTheFieldTheyRefuse) {
  auto no_cwd = decode_worker_request(R"({"op":"resolve","path":"a","which":[]})");
  ASSERT_FALSE(no_cwd);
  EXPECT_EQ(no_cwd.error().message(), "worker request: \"cwd\" is missing or not a string");
  auto bad_args = decode_worker_request(R"({"op":"read","path":"/a","args":[1]})");
  ASSERT_FALSE(bad_args);
  EXPECT_NE(bad_args.error().message().find("\"args\""), std::string::npos);
  auto reply = decode_resolve_reply(R"({"path":"/a","exists":"yes","isDir":false,"program":""})");
  ASSERT_FALSE(reply);
  EXPECT_NE(reply.error().message().find("\"exists\" is missing or not a boolean"),
            std::string::npos);
  EXPECT_EQ(decode_op_reply("[1]").error().message(),
            "the sandbox worker returned malformed JSON");
}

TEST(WorkerOps, TheHandlerAnswersAnUnknownOperationAndAMalformedRequestWithAnError) {
  const OpRequest nope{"nope", "/", nlohmann::json::object()};
  auto unknown = decode_op_reply(handle_in_sandbox(encode(nope)));
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->error, "unknown operation 'nope'");
  auto malformed = decode_op_reply(handle_in_sandbox("{"));
  ASSERT_TRUE(malformed);
  EXPECT_EQ(malformed->error, "malformed request");
}

}  // namespace
}  // namespace moat::tools
