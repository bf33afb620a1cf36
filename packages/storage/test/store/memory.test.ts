import { blobStoreCompliance } from './compliance.js'
import { createMemoryStore } from '../../src/store/index.js'

blobStoreCompliance('memory', ({ chunkSize }) => {
  const store = createMemoryStore(chunkSize === undefined ? {} : { chunkSize })
  return Promise.resolve({
    store,
    corruptData: (address, offset) => {
      if (!store.corrupt(address, offset)) throw new Error('no such object')
      return Promise.resolve()
    },
    corruptTable: (address, offset) => {
      if (!store.corruptTable(address, offset)) throw new Error('no such object')
      return Promise.resolve()
    },
    cleanup: () => Promise.resolve(),
  })
})
