import { packageConfig } from '../../tsup.base.js'

export default packageConfig({"index": "src/index.ts", "client": "src/client.ts", "testing/index": "src/testing/index.ts"})
