import { packageConfig } from '../../tsup.base.js'

// vitest stays external: only the testing entry's compliance suite imports it (a dev tool).
export default packageConfig({ index: 'src/index.ts', client: 'src/client.ts', testing: 'src/testing.ts' }, { external: ['vitest'] })
