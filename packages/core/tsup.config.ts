import { packageConfig } from '../../tsup.base.js'

// One entry per `exports` subpath of package.json (the rooms of docs/ARCHITECTURE.md's layer order).
export default packageConfig({"index": "src/index.ts", "client": "src/client.ts", "base": "src/base.ts", "hash/index": "src/hash/index.ts", "config/index": "src/config/index.ts", "metrics/index": "src/metrics/index.ts", "concurrency/index": "src/concurrency/index.ts", "resilience/index": "src/resilience/index.ts", "auth/index": "src/auth/index.ts", "http/index": "src/http/index.ts", "transport/index": "src/transport/index.ts", "auth-remote/index": "src/auth-remote/index.ts", "health/index": "src/health/index.ts", "service/index": "src/service/index.ts", "testing/index": "src/testing/index.ts"})
