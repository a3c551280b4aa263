# The official openai npm client (tests/server/openai_client.cjs) against the fake-engine
# server; installs openai@4 into the git-ignored .cache/npm first. Usage: PORT API_KEY.
if [ ! -d .cache/npm/node_modules/openai ] &&
   ! npm install --prefix .cache/npm openai@4 --no-audit --no-fund >/dev/null 2>&1; then
  echo "FAIL openai_npm_install: npm install --prefix .cache/npm openai@4 failed"
  exit 1
fi
node tests/server/openai_client.cjs "$1" "$2"
