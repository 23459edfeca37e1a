// The layers below the gateway, seen by every file of PosternCore and by its clients (the tests, the bench
// tools, `postern`) through one import. Transitional: the per-target test targets import what they test.
@_exported import DirectusPlan
@_exported import PosternHTTP
@_exported import PosternIO
@_exported import PosternRedis
