import { packageConfig } from '../../tsup.base.js'

// Declarations only for the library entry; the binary needs none.
export default packageConfig({ index: 'src/index.ts', bin: 'src/bin.ts' }, { dts: { entry: { index: 'src/index.ts' } } })
