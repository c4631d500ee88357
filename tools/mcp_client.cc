// tools/mcp_client.cc: the MCP stdio client (contract in mcp_client.h). Early stub: the API
// compiles; the implementation follows.
#include "tools/mcp_client.h"

namespace moat::tools::mcp {

struct Client::State {
  std::string server;
  ServerInfo info;
};

Client::Client(std::unique_ptr<State> state) : state_(std::move(state)) {}
Client::~Client() { close(); }

Result<std::unique_ptr<Client>> Client::start(std::string server, UniqueFd, UniqueFd,
                                              ServerLimits, std::stop_token) {
  return fail("mcp server " + server + ": client not implemented yet");
}
Result<std::vector<ToolInfo>> Client::list_tools(std::stop_token) {
  return fail("not implemented");
}
Result<CallOutcome> Client::call_tool(const std::string&, const nlohmann::json&,
                                      std::stop_token, std::function<void(const Progress&)>) {
  return fail("not implemented");
}
Result<void> Client::ping(std::stop_token) { return fail("not implemented"); }
bool Client::tools_changed() const { return false; }
std::optional<Error> Client::ended() const { return std::nullopt; }
const ServerInfo& Client::info() const { return state_->info; }
const std::string& Client::server() const { return state_->server; }
void Client::close() {}

ToolResult to_tool_result(const CallOutcome&) { return {}; }

}  // namespace moat::tools::mcp
