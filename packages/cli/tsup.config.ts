import { packageConfig } from '../../tsup.base.js'

// The library entry (what embedders import). The executable, dist/bin.js, is a bundle built after
// it by tsup.bin.config.ts.
export default packageConfig({ index: 'src/index.ts' })
