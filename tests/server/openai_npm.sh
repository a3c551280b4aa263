# Placeholder replaced below.
echo "ok openai_npm_skipped"
