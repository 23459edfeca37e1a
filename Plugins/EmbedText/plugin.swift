import PackagePlugin

/// Compiles the operator console's style sheet and script into PosternCore: postern-embed turns
/// `Console/Resources/dashboard.css` and `dashboard.js` into `DashboardPage.style` and `DashboardPage.script`
/// on every build where either file changed (docs/architecture.md, The folders of PosternCore: Console).
@main struct EmbedText: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let folder = context.package.directoryURL.appending(path: "Sources/\(target.name)/Console/Resources")
        let files = [("style", "dashboard.css"), ("script", "dashboard.js")]
        let inputs = files.map { folder.appending(path: $0.1) }
        let output = context.pluginWorkDirectoryURL.appending(path: "DashboardPage+Resources.swift")
        return [.buildCommand(
            displayName: "Embedding the dashboard's CSS and JavaScript",
            executable: try context.tool(named: "postern-embed").url,
            arguments: [output.path, "DashboardPage"] + zip(files, inputs).map { "\($0.0)=\($1.path)" },
            inputFiles: inputs,
            outputFiles: [output])]
    }
}
