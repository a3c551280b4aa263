# Installs the official SDKs, pinned, into the git-ignored .cache/npm (again only when the
# installed version differs), then runs a client script: sdk_npm.sh SCRIPT ARGS...
PINS="openai@7.59.0 @anthropic-ai/sdk@1.15.0 ajv@8.17.1 ajv-formats@3.0.1 ai@7.0.173
@ai-sdk/openai-compatible@3.0.92 zod@4.6.7 @langchain/openai@1.6.0 @langchain/core@1.4.0 @openai/agents@0.20.0"
for pkg in $PINS; do
  name=${pkg%@*} want=${pkg##*@}
  have=$(node -p "require('./.cache/npm/node_modules/$name/package.json').version" 2>/dev/null)
  if [ "$have" != "$want" ] &&
     ! npm install --prefix .cache/npm "$pkg" --no-audit --no-fund >/dev/null 2>&1; then
    echo "FAIL npm_install: npm install --prefix .cache/npm $pkg failed"
    exit 1
  fi
done
node "$@"
