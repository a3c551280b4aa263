# The official openai npm client (tests/server/openai_client.cjs, Chat Completions, and
# tests/server/responses_fake_client.cjs, Responses) against the fake-engine server;
# sdk_npm.sh installs the pinned SDKs into the git-ignored .cache/npm first.
# Usage: PORT API_KEY.
bash tests/server/sdk_npm.sh tests/server/openai_client.cjs "$1" "$2" || exit 1
node tests/server/responses_fake_client.cjs "$1" "$2"
