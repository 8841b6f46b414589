// node:http without an ES module import. An import of a Node built-in reads every export of
// it, and three of node:http's (WebSocket, CloseEvent, MessageEvent) are getters that load
// Node's own bundled fetch and WebSocket client: about 2.6 MiB of heap and more of resident
// memory in every thread that imports node:http, for classes nothing here uses.
// process.getBuiltinModule() hands over the module's exports and reads none of them. Every
// module of the servers takes node:http's values from here (lint forbids the import
// elsewhere); type imports from node:http cost nothing.
export const http = process.getBuiltinModule('node:http');
