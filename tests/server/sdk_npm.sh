# Installs the official openai@4 and @anthropic-ai/sdk packages into the git-ignored
# .cache/npm (once), then runs a client script: sdk_npm.sh SCRIPT ARGS...
for pkg in openai@4 @anthropic-ai/sdk; do
  dir=.cache/npm/node_modules/${pkg%@4}
  if [ ! -d "$dir" ] && ! npm install --prefix .cache/npm "$pkg" --no-audit --no-fund >/dev/null 2>&1; then
    echo "FAIL npm_install: npm install --prefix .cache/npm $pkg failed"
    exit 1
  fi
done
node "$@"
